// An in-browser stand-in for the Rust side, for previewing the UI outside Tauri
// (`?mock`, `?mock=empty`, `?mock=error`, `?mock=policy`, `?mock=compact`, `?mock=approval`,
// `?mock=approval-env`, `?mock=no-sandbox`, `?mock=heartbeat`, `?mock=processes`,
// `?mock=routines`, `?mock=routines-corrupted`; a message starting with "run" (add "env"
// for a command that sets one) asks for approval in any of them, a heartbeat runs every ~20 s in all of them, and the
// Processes panel can start commands in all of them). `ipc.ts` imports it lazily and only when `__TAURI_INTERNALS__` is absent, so it never runs in the app. It
// replays the event order the core uses (see vigil-core `agent/mod.rs` and `runtime.rs`):
// sessions run concurrently, a message sent during a turn is queued and steers it at its
// next step, and after Stop queued messages are saved without an answer.

import type { Backend, Unlisten } from './ipc';
import { createMockGate } from './mock-approvals';
import { createMockHeartbeat } from './mock-heartbeat';
import { createMockChannels } from './mock-channels';
import { createMockMcp } from './mock-mcp';
import { createMockProcesses, execHistory } from './mock-processes';
import { createMockRoutines } from './mock-routines';
import { CONFIG_DIFF, CONFIG_FILE, SAMPLE_REPLY, sampleSessions, text, userTurn, type MockSession } from './mock-data';
import type {
  ApprovalDecision,
  ApprovalKind,
  ApprovalPolicy,
  DesktopSettings,
  Event,
  HealthView,
  HeartbeatSettings,
  RoutineDraft,
  EventEnvelope,
  History,
  JsonValue,
  Message,
  ProviderSettings,
  SettingsView,
  Usage,
  WakeReason,
  ChannelOp,
} from './protocol';

const INTERRUPT_PREFIX = '[INTERRUPT] New message from user: ';

/** One session's lane, as in `runtime.rs`: one turn at a time, a queue for steering. */
interface Lane {
  busy: boolean;
  queue: string[];
  cancelled: boolean;
}

export function createMockBackend(variant: string): Backend {
  const handlers = new Set<(e: EventEnvelope) => void>();
  let seq = 0;
  const sessions = new Map<string, MockSession>(sampleSessions(Date.now(), variant === 'empty').map((s) => [s.summary.id, s]));
  if (variant === 'processes') sessions.get('main')?.messages.push(...execHistory(Date.now()));
  const lanes = new Map<string, Lane>();
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
    notifications: { processes: true, routines: true, heartbeat: true, approvals: true },
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
      id: `mock-${++seq}`,
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
  const heartbeat = createMockHeartbeat(variant, emit, () => lanes.get('main')?.busy ?? false);
  const processes = createMockProcesses(variant, emit);
  const routines = createMockRoutines(variant, emit);
  const mcp = createMockMcp(emit);
  const channels = createMockChannels(emit);

  const startedAt = Date.now();

  /** The core's health check, from what the mock keeps; locks are not simulated. */
  function health(): HealthView {
    const stats = heartbeat.view().stats;
    const routineList = routines.list().routines;
    return {
      status: 'healthy',
      started_at: startedAt,
      uptime_ms: Date.now() - startedAt,
      paused: false,
      lanes: [...lanes.entries()]
        .filter(([, lane]) => lane.busy)
        .map(([id, lane]) => ({ session_id: id, scope: 'primary', queued: lane.queue.length })),
      locks: { held: 0, acquired: 0, waited: 0, wait_ms_total: 0, wait_ms_max: 0, timeouts: 0, reclaimed: 0 },
      heartbeat: {
        handler_registered: true,
        running: false,
        pending_wakes: 0,
        requests_waiting: 0,
        wakes_by_reason: { interval: stats.wakes_requested },
        retried_busy: stats.skipped['requests-in-flight'] ?? 0,
        retried_failed: 0,
        skipped_lock: 0,
        run_count: stats.runs,
        run_ms_total: stats.runs * 1800,
        run_ms_max: stats.runs > 0 ? 2400 : 0,
        run_ms_last: stats.runs > 0 ? 1800 : 0,
        delivered: stats.sent,
        suppressed: stats.suppressed,
        skipped_busy: stats.skipped['requests-in-flight'] ?? 0,
        usage_today: { input_tokens: 0, output_tokens: 0 },
        runs_today: 0,
        daily_token_budget: 0,
        budget_spent: false,
        idle_factor: 1,
      },
      mailbox: {
        waiting: heartbeat.snapshot().length,
        deposited: stats.sent,
        drained: Math.max(0, stats.sent - heartbeat.snapshot().length),
      },
      routines: {
        scheduled: routineList.filter((r) => r.enabled && r.next_run_at !== null).length,
        running: routineList.filter((r) => r.state === 'running').length,
        job_sessions_created: 0,
      },
      processes_running: processes.list().filter((p) => p.state === 'running').length,
      alerts: [],
    };
  }

  function list() {
    return [...sessions.values()].map((s) => s.summary).sort((a, b) => b.updated_at - a.updated_at);
  }

  function sessionsChanged(): void {
    emit(null, null, { type: 'sessions_changed', sessions: list() });
  }

  function lane(id: string): Lane {
    let l = lanes.get(id);
    if (!l) lanes.set(id, (l = { busy: false, queue: [], cancelled: false }));
    return l;
  }

  /** A turn in one session; `say` appends and announces a saved message. */
  function turnIn(sessionId: string, runId: string) {
    const session = sessions.get(sessionId);
    const me = lane(sessionId);
    const total: Usage = { input_tokens: 0, output_tokens: 0 };
    const say = (message: Message) => {
      session?.messages.push(message);
      emit(sessionId, runId, { type: 'message_appended', message });
    };
    const ev = (event: Event) => emit(sessionId, runId, event);
    const count = (usage: Usage) => {
      total.input_tokens += usage.input_tokens;
      total.output_tokens += usage.output_tokens;
      return usage;
    };
    async function stream(body: string, chunkMs = 45): Promise<string> {
      let sent = '';
      for (const chunk of body.match(/[\s\S]{1,14}/g) ?? []) {
        if (me.cancelled) break;
        await sleep(chunkMs);
        sent += chunk;
        ev({ type: 'text_delta', text: chunk });
      }
      return sent;
    }
    /** One round that ends in a tool call: optional text, the call, its result. */
    async function toolRound(id: string, name: string, input: JsonValue, lead: string, output: string, tail: string[]) {
      const said = lead ? await stream(lead) : '';
      const content: Message['content'] = said ? [{ type: 'text', text: said }] : [];
      if (me.cancelled) {
        if (said) say({ ...text('assistant', said, Date.now()), model: provider.model, stop_reason: 'cancelled' });
        return;
      }
      content.push({ type: 'tool_use', id, name, input });
      const usage = count({ input_tokens: 1200 + seq, output_tokens: 40 });
      say({ role: 'assistant', content, ts: Date.now(), model: provider.model, usage, stop_reason: 'tool_use' });
      ev({ type: 'tool_call_started', call_id: id, name, input });
      let shown = '';
      for (const line of tail) {
        await sleep(350);
        if (me.cancelled) break;
        shown += `${line}\n`;
        ev({ type: 'tool_call_update', call_id: id, output: shown });
      }
      await sleep(500);
      const [content2, isError] = me.cancelled ? ['Cancelled.', true] : [output, false];
      ev({ type: 'tool_call_finished', call_id: id, name, content: content2, is_error: isError });
      say({ role: 'tool_result', content: [{ type: 'tool_result', tool_use_id: id, content: content2, is_error: isError }], ts: Date.now() });
    }
    /** Queued messages reach the model as `[INTERRUPT] …` (agent `inject_steer`). */
    function steer(): boolean {
      if (me.queue.length === 0) return false;
      const queued = me.queue.splice(0);
      for (const t of queued) say({ ...text('user', INTERRUPT_PREFIX + t, Date.now()), kind: { type: 'interrupt' } });
      ev({ type: 'queue_consumed', count: queued.length });
      return true;
    }
    return { say, ev, stream, toolRound, steer, count, total, me };
  }

  /** A call that needs the gate's yes: its arguments, what is asked, what it prints. */
  interface GatedCall {
    name: string;
    input: JsonValue;
    kind: ApprovalKind;
    subject: string;
    cwd?: string;
    env?: string[];
    lines: string[];
  }

  /**
   * A round whose calls need approval (two commands at once, so the cards stack; or a file
   * outside the workspace when the message names a path), then an answer that says what
   * happened.
   */
  async function approvalTurn(sessionId: string, runId: string, t: ReturnType<typeof turnIn>, userText: string) {
    const path = userText.match(/(?:~|\/home)\/[\w.\/-]+/)?.[0]?.replace(/^~/, '/home/you');
    const cwd = '/home/you/projects/vigil';
    const calls: GatedCall[] = path
      ? [{ name: 'read', input: { path }, kind: 'read_outside', subject: path, lines: ['# Trips 2024', '- Lisbon, 12–14 Oct: trams, tiles, pastéis'] }]
      : [
          {
            name: 'exec',
            input: { command: 'cargo build --release', cwd },
            kind: 'exec',
            subject: 'cargo build --release',
            cwd,
            lines: ['   Compiling vigil-core v0.1.0', '   Compiling vigil v0.1.0', '    Finished `release` profile in 41.2s'],
          },
          {
            // A compound line: `git status` is read-only (allowed), `git clean -n` needs the user.
            name: 'exec',
            input: { command: 'git status --short && git clean -n', cwd },
            kind: 'exec',
            subject: 'git status --short && git clean -n',
            cwd,
            lines: [' M src/config.rs', 'Would remove target/tmp/'],
          },
          ...(/\benv\b/i.test(userText)
            ? [
                {
                  name: 'exec',
                  input: { command: 'cargo test', cwd, env: { RUST_LOG: 'debug' } },
                  kind: 'exec' as const,
                  subject: 'cargo test',
                  cwd,
                  env: ['RUST_LOG=debug'],
                  lines: ['test result: ok. 42 passed'],
                },
              ]
            : []),
        ];
    await sleep(300);
    const lead = await t.stream(path ? 'That file is outside my workspace, so I will ask before reading it.' : 'I will build it and check the working tree.');
    if (t.me.cancelled) return 'cancelled' as const;
    const ids = calls.map(() => `call-${++seq}`);
    const content: Message['content'] = [{ type: 'text', text: lead }];
    calls.forEach((c, i) => content.push({ type: 'tool_use', id: ids[i], name: c.name, input: c.input }));
    const usage = t.count({ input_tokens: 900, output_tokens: 60 });
    t.say({ role: 'assistant', content, ts: Date.now(), model: provider.model, usage, stop_reason: 'tool_use' });
    for (const [i, c] of calls.entries()) t.ev({ type: 'tool_call_started', call_id: ids[i], name: c.name, input: c.input });
    const results = await Promise.all(
      calls.map(async (c, i) => {
        const verdict = await gate.check({ sessionId, runId, kind: c.kind, subject: c.subject, cwd: c.cwd, env: c.env });
        let output = verdict.allowed ? '' : verdict.reason;
        for (const line of verdict.allowed ? c.lines : []) {
          await sleep(400);
          if (t.me.cancelled) break;
          output += `${line}\n`;
          t.ev({ type: 'tool_call_update', call_id: ids[i], output });
        }
        const isError = !verdict.allowed || t.me.cancelled;
        if (t.me.cancelled) output = 'Cancelled.';
        t.ev({ type: 'tool_call_finished', call_id: ids[i], name: c.name, content: output, is_error: isError });
        return { id: ids[i], output, isError, subject: c.subject };
      }),
    );
    t.say({
      role: 'tool_result',
      content: results.map((r) => ({ type: 'tool_result' as const, tool_use_id: r.id, content: r.output, is_error: r.isError })),
      ts: Date.now(),
    });
    if (t.me.cancelled) return 'cancelled' as const;
    t.steer();
    const refused = results.filter((r) => r.isError).map((r) => `\`${r.subject}\``);
    const answer =
      refused.length === 0
        ? path
          ? 'Last year you went to **Lisbon** on 12–14 October; this year’s plan is a similar length, so the same pace should work.'
          : 'The release build finished, and the only change in the tree is `src/config.rs`.'
        : `Understood — I did not run ${refused.join(' or ')}. Tell me if you want me to try another way.`;
    const sent = await t.stream(answer);
    const stop = t.me.cancelled ? ('cancelled' as const) : ('end_turn' as const);
    const finalUsage = stop === 'cancelled' ? undefined : t.count({ input_tokens: 1300, output_tokens: 50 });
    if (sent) t.say({ ...text('assistant', sent, Date.now()), model: provider.model, usage: finalUsage, stop_reason: stop });
    return stop;
  }

  async function runTurn(sessionId: string, userText: string): Promise<void> {
    const runId = `run-${++seq}`;
    const t = turnIn(sessionId, runId);
    // A primary turn reads the mailbox at its start and acknowledges it only if it succeeds.
    const mailbox = sessionId === 'main' ? heartbeat.snapshot() : [];
    t.say(userTurn(userText, Date.now()));
    t.ev({ type: 'turn_started', user_text: userText });
    const finish = (stop_reason: 'end_turn' | 'cancelled' | 'policy' | 'error', detail?: string) => {
      if (stop_reason === 'end_turn') heartbeat.acknowledge(mailbox);
      t.ev({ type: 'turn_finished', stop_reason, usage: t.total, ...(detail ? { detail } : {}) });
    };

    if (variant === 'error') {
      await sleep(400);
      t.ev({ type: 'error', kind: 'auth', message: 'The provider rejected the API key (401). Check it in Settings.' });
      return finish('error');
    }
    if (asksApproval || /^run\b/i.test(userText.trim())) return finish(await approvalTurn(sessionId, runId, t, userText));
    if (variant === 'compact') {
      await sleep(300);
      const before = sessions.get(sessionId)?.messages.length ?? 0;
      t.say({
        ...text('user', '[Summary of the earlier conversation]\n\nEverything so far, in a few lines (mock).', Date.now()),
        kind: { type: 'summary', replaces_before: before - 1 },
      });
      t.ev({ type: 'compacted', summarized_messages: before - 1, tokens_before: 182_000, tokens_after: 21_500 });
    }
    for (const piece of ['Let me look', ' at the file first.']) {
      await sleep(150);
      t.ev({ type: 'reasoning_delta', text: piece });
    }
    await t.toolRound('call-' + ++seq, 'read', { path: 'src/config.rs' }, 'I will read the file first.', CONFIG_FILE, [
      '     1  use serde::Deserialize;',
      '     2',
      '     3  #[derive(Deserialize)]',
    ]);
    if (t.me.cancelled) return finish('cancelled');
    t.steer();
    if (variant === 'policy') {
      return finish('policy', 'Stopped after 1 tool round: the turn policy allows no more in this mock.');
    }
    await t.toolRound(
      'call-' + ++seq,
      'edit',
      { path: 'src/config.rs', old_text: 'defualt_model', new_text: 'default_model', replace_all: true },
      '',
      CONFIG_DIFF,
      [],
    );
    if (t.me.cancelled) return finish('cancelled');
    t.steer();
    t.ev({ type: 'retrying', attempt: 1, delay_ms: 2000, reason: 'HTTP 529 overloaded' });
    await sleep(1200);
    let more = true;
    let body = SAMPLE_REPLY;
    while (more) {
      const sent = await t.stream(body);
      const stop = t.me.cancelled ? 'cancelled' : 'end_turn';
      if (sent) {
        const usage = stop === 'cancelled' ? undefined : t.count({ input_tokens: 2100, output_tokens: 180 });
        t.say({ ...text('assistant', sent, Date.now()), model: provider.model, usage, stop_reason: stop });
      }
      if (stop === 'cancelled') return finish('cancelled');
      // Messages sent meanwhile reach the model even after a final answer.
      more = t.steer();
      body = 'Noted — I have taken your message into account. Anything else?';
    }
    finish('end_turn');
  }

  /** As `runtime.rs` `start_turn` + `after_turn`. */
  async function startTurn(sessionId: string, userText: string): Promise<void> {
    const l = lane(sessionId);
    if (l.busy) {
      l.queue.push(userText);
      emit(sessionId, null, { type: 'message_queued', text: userText });
      return;
    }
    const session = sessions.get(sessionId);
    if (session && session.messages.length === 0 && session.summary.title.startsWith('New conversation')) {
      session.summary = { ...session.summary, title: userText.split('\n', 1)[0].slice(0, 48) };
    }
    l.busy = true;
    let next: string | null = userText;
    while (next !== null) {
      l.cancelled = false;
      await runTurn(sessionId, next);
      if (session) session.summary = { ...session.summary, updated_at: Date.now() };
      sessionsChanged();
      const queued = l.queue.splice(0);
      next = null;
      if (queued.length > 0 && !l.cancelled) next = queued.join('\n\n');
      else if (queued.length > 0) {
        for (const t of queued) {
          const m = text('user', t, Date.now());
          session?.messages.push(m);
          emit(sessionId, null, { type: 'message_appended', message: m });
        }
        emit(sessionId, null, { type: 'queue_consumed', count: queued.length });
      }
    }
    l.busy = false;
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
      return { session_id: id, messages: [...s.messages], warnings: [] };
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
    health: () => health(),
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
    run_routine_now: (args) => routines.runNow(args.id as string),
    retry_routine_run: (args) => routines.resolve(args.id as string, args.runId as string, true),
    dismiss_routine_run: (args) => routines.resolve(args.id as string, args.runId as string, false),
    restore_routines: () => routines.restore(),
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
