// An in-browser stand-in for the Rust side, for previewing the UI outside Tauri
// (`?mock`, `?mock=empty`, `?mock=error`, `?mock=policy`, `?mock=compact`, `?mock=approval`,
// `?mock=approval-env`, `?mock=no-sandbox`, `?mock=heartbeat`, `?mock=processes`,
// `?mock=routines`, `?mock=routines-corrupted`; a message starting with "run" (add "env"
// for a command that sets one) asks for approval in any of them, a heartbeat runs every
// ~20 s in all of them, and the Processes panel can start commands in all of them). `ipc.ts`
// imports it lazily and only when `__TAURI_INTERNALS__` is absent, so it never runs in the app.
//
// Owns: the command table (`invoke`) and the event fan-out (`listen`), the sessions, the
// provider and desktop settings. Each concept the core has lives in its own `mock-*.ts`:
// turns and lanes (`mock-turns.ts`, which replays the core's event order), the gate, the
// heartbeat, processes, routines, MCP, the health check, the sample data.
// Must never: be imported by the app itself (only `ipc.ts`, lazily, outside Tauri).

import type { Backend, Unlisten } from './backend';
import { createMockGate } from './mock-approvals';
import { sampleSessions, type MockSession } from './mock-data';
import { mockHealth } from './mock-health';
import { createMockHeartbeat } from './mock-heartbeat';
import { createMockChannels } from './mock-channels';
import { createMockMcp } from './mock-mcp';
import { createMockProcesses, execHistory } from './mock-processes';
import { createMockRoutines } from './mock-routines';
import { createMockTurns } from './mock-turns';
import type {
  ApprovalDecision,
  ApprovalKind,
  ApprovalPolicy,
  DesktopSettings,
  Event,
  EventEnvelope,
  HeartbeatSettings,
  History,
  ProviderSettings,
  RoutineDraft,
  SettingsView,
  WakeReason,
  ChannelOp,
} from './protocol';

export function createMockBackend(variant: string): Backend {
  const handlers = new Set<(e: EventEnvelope) => void>();
  const counter = { seq: 0 };
  const sessions = new Map<string, MockSession>(sampleSessions(Date.now(), variant === 'empty').map((s) => [s.summary.id, s]));
  if (variant === 'processes') sessions.get('main')?.messages.push(...execHistory(Date.now()));
  let provider: ProviderSettings = {
    kind: 'anthropic',
    base_url: 'https://api.anthropic.com',
    model: 'claude-sonnet-4-5',
    max_tokens: 8192,
  };
  let keySet = variant !== 'empty';
  let desktop: DesktopSettings = {
    close_to_tray: true,
    start_at_login: false,
    theme: 'system',
    notifications: { processes: true, routines: true, monitors: true, heartbeat: true, approvals: true },
    workspace: null,
    continuation_limit: 10,
    approval_timeout_secs: 3600,
    keep_awake: true,
    away_after_minutes: 60,
  };
  const defaultWorkspace = '/home/you/.local/share/dev.vigil.desktop/workspace';

  const view = (): SettingsView => ({
    provider,
    api_key_set: keySet,
    key_storage: keySet ? 'file' : 'none',
    env_overrides: [],
    warnings: keySet
      ? ['No keyring service was found, so the API key is kept in a file readable only by you (mock).']
      : [],
  });

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const asksApproval = variant.startsWith('approval');

  function emit(sessionId: string | null, runId: string | null, event: Event): void {
    const envelope = {
      id: `mock-${++counter.seq}`,
      ts: Date.now(),
      session_id: sessionId,
      scope: sessionId === null ? 'app' : 'primary',
      source: 'agent',
      run_id: runId,
      ...event,
    } as EventEnvelope;
    for (const h of handlers) h(envelope);
  }

  const gate = createMockGate(variant, emit);
  const heartbeat = createMockHeartbeat(variant, emit, () => turns.lanes.get('main')?.busy ?? false);
  const processes = createMockProcesses(variant, emit);
  const routines = createMockRoutines(variant, emit);
  const mcp = createMockMcp(emit);
  const channels = createMockChannels(emit);

  const turns = createMockTurns({ variant, emit, counter, sessions, gate, heartbeat, model: () => provider.model, sessionsChanged });
  const { lanes, lane, startTurn } = turns;
  const startedAt = Date.now();

  function list() {
    return [...sessions.values()].map((s) => s.summary).sort((a, b) => b.updated_at - a.updated_at);
  }

  function sessionsChanged(): void {
    emit(null, null, { type: 'sessions_changed', sessions: list() });
  }

  let created = 0;
  let backgroundAsked = false;
  type OpArgs = {
    type: string;
    text?: string;
    session_id?: string;
    title?: string;
    id?: string;
    decision?: ApprovalDecision;
    limit?: number;
    command?: string;
    process_id?: string;
    data?: string;
    cols?: number;
    rows?: number;
    reason?: WakeReason;
    op?: unknown;
  };

  const commands: Record<string, (args: Record<string, unknown>) => unknown> = {
    submit: (args) => {
      const op = args.op as OpArgs;
      const id = op.session_id ?? 'main';
      switch (op.type) {
        case 'user_message':
          void startTurn(id, op.text ?? '');
          break;
        case 'interrupt':
          if (lanes.get(id)?.busy) lane(id).cancelled = true;
          gate.cancelSession(id);
          break;
        case 'approval':
          if (!gate.answer(op.id ?? '', op.decision ?? 'deny')) {
            emit(null, null, {
              type: 'error',
              kind: 'invalid_op',
              message: `No approval request ${op.id} is waiting (already answered or cancelled).`,
            });
          }
          break;
        case 'create_session': {
          const now = Date.now();
          const sid = `s-new-${++created}`;
          const title = op.title?.trim() || 'New conversation';
          sessions.set(sid, { summary: { id: sid, title, created_at: now, updated_at: now, continuations: 0 }, messages: [] });
          sessionsChanged();
          break;
        }
        case 'rename_session': {
          const s = sessions.get(id);
          if (!s || !op.title?.trim()) {
            emit(null, null, { type: 'error', kind: 'session', message: 'A title cannot be empty.' });
            break;
          }
          s.summary = { ...s.summary, title: op.title.trim() };
          sessionsChanged();
          break;
        }
        case 'set_continuation_limit': {
          const s = sessions.get(id);
          if (s) {
            s.summary = { ...s.summary, continuation_limit: op.limit };
            if (op.limit === undefined) delete s.summary.continuation_limit;
          }
          sessionsChanged();
          break;
        }
        case 'delete_session':
          if (id === 'main' || lanes.get(id)?.busy) {
            emit(null, null, { type: 'error', kind: 'session', message: `Conversation ${id} cannot be deleted now.` });
            break;
          }
          sessions.delete(id);
          sessionsChanged();
          break;
        case 'start_process':
          processes.start_process(op.command ?? '');
          break;
        case 'process_input':
          processes.input(op.process_id ?? '', op.data ?? '');
          break;
        case 'process_kill':
          processes.kill(op.process_id ?? '');
          break;
        case 'process_resize':
          processes.resize(op.process_id ?? '', op.cols ?? 80, op.rows ?? 24);
          break;
        case 'wake':
          heartbeat.wake(op.reason ?? 'manual');
          break;
        case 'channels':
          channels.op(op.op as ChannelOp);
          break;
      }
    },
    list_sessions: () => list(),
    history: (args): History => {
      const id = (args.sessionId as string | undefined) ?? 'main';
      const s = sessions.get(id);
      if (!s) throw { code: 'storage', message: `No conversation ${id}.` };
      return { session_id: id, messages: s.messages.map((m, i) => ({ id: `mock-${id}-${i}`, ...m })), warnings: [] };
    },
    get_settings: () => view(),
    save_settings: (args) => {
      const p = args.provider as ProviderSettings;
      if (!/^https?:\/\//.test(p.base_url)) {
        throw { code: 'invalid_settings', message: `Base URL "${p.base_url}" is not a URL.` };
      }
      provider = p;
      if (typeof args.apiKey === 'string') keySet = args.apiKey !== '';
      return view();
    },
    test_connection: (args) =>
      keySet || (typeof args.apiKey === 'string' && args.apiKey !== '')
        ? { ok: true, message: `Connected to ${(args.provider as ProviderSettings).model} (mock).` }
        : { ok: false, message: 'No API key is set.' },
    get_approvals: () => gate.view(),
    set_approval_policy: (args) => gate.setPolicy(args.policy as ApprovalPolicy),
    forget_approval: (args) => gate.forget(args.kind as ApprovalKind, args.prefix as string),
    set_sandbox_network: (args) => gate.setNetwork(args.on as boolean),
    set_sandbox_writable: (args) => gate.setWritable(args.folders as string[]),
    set_sandbox_unattended_network: (args) => gate.setUnattendedNetwork(args.on as boolean),
    set_sandbox_hidden: (args) => gate.setHidden(args.hidden as string[]),
    set_sandbox_sockets: (args) => gate.setSockets(args.sockets as string[]),
    set_routine_network: (args) => gate.setRoutineNetwork(args.id as string, args.on as boolean),
    list_processes: () => processes.list(),
    process_output: (args) => processes.output(args.processId as string),
    heartbeat_view: () => heartbeat.view(),
    health: () => mockHealth({ startedAt, lanes, heartbeat, routines, processes }),
    save_heartbeat_settings: (args) => heartbeat.save(args.settings as HeartbeatSettings),
    notify: (args) => {
      console.info('[mock] notification', args);
    },
    get_desktop_settings: () => ({ settings: desktop, warnings: [], workspace_in_use: defaultWorkspace }),
    save_desktop_settings: (args) => {
      const next = args.settings as DesktopSettings;
      const typed = next.workspace?.trim() || null;
      if (typed !== null && !typed.startsWith('/')) {
        throw { code: 'invalid_workspace', field: 'workspace', message: `"${typed}" is not a full path; write it from the root, like /home/you/notes` };
      }
      desktop = { ...next, workspace: typed };
      return { settings: desktop, warnings: [], workspace_in_use: defaultWorkspace };
    },
    set_attention: () => undefined,
    ui_ready: () => undefined,
    list_routines: () => routines.list(),
    routine_history: (args) => routines.history(args.id as string),
    preview_schedule: (args) =>
      routines.preview(args.schedule as string | null, args.timezone as string | null, args.nextRunAt as number | null),
    add_routine: (args) => routines.add(args.draft as RoutineDraft),
    update_routine: (args) => routines.update(args.id as string, args.draft as RoutineDraft),
    remove_routine: (args) => routines.remove(args.id as string, args.hard === true),
    restore_routine: (args) => routines.restoreRemoved(args.id as string),
    set_routine_enabled: (args) => routines.setEnabled(args.id as string, args.enabled as boolean),
    approve_routine: (args) => routines.approve(args.id as string),
    run_routine_now: (args) => routines.runNow(args.id as string),
    retry_routine_run: (args) => routines.resolve(args.id as string, args.runId as string, true),
    dismiss_routine_run: (args) => routines.resolve(args.id as string, args.runId as string, false),
    restore_routines: () => routines.restore(),
    trust_heartbeat_file: () => routines.trust(),
    heartbeat_checks: () => routines.checks(),
    save_heartbeat_checks: (args) => routines.saveChecks(args.expected as string, args.text as string),
    quit: () => undefined,
    ...mcp.commands,
  };

  return {
    async invoke<T>(command: string, args: Record<string, unknown> = {}): Promise<T> {
      await sleep(command === 'test_connection' ? 700 : 20);
      const run = commands[command];
      if (!run) throw { code: 'unknown', message: `The mock has no command ${command}.` };
      return run(args) as T;
    },
    async listen(handler): Promise<Unlisten> {
      handlers.add(handler);
      heartbeat.start();
      processes.start();
      // `?mock=approval`: a conversation not on screen asks too, for the sidebar's marker.
      if (asksApproval && !backgroundAsked) {
        backgroundAsked = true;
        setTimeout(() => void startTurn('s-trip', 'Compare it with last year’s trip in ~/Documents/trips-2024.md'), 1500);
      }
      return () => handlers.delete(handler);
    },
  };
}
