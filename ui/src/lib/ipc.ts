// Every call from the window into the Rust side goes through this module: one typed
// wrapper per Tauri command and one for the event stream. Components never call `invoke`
// or `listen` themselves, so the command names and argument shapes live in one place.
//
// Outside Tauri (a plain browser) there is no backend. With `?mock` in the URL a small
// in-browser mock is loaded instead so the UI can be previewed and screenshotted; the mock
// is a separate, lazily imported chunk that is only fetched when `__TAURI_INTERNALS__` is
// absent, so it can never run inside the app.

import { invoke } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import type {
  ApprovalKind,
  ApprovalPolicy,
  ApprovalsView,
  CommandError,
  ConnectionVerdict,
  DesktopSettings,
  DesktopSettingsView,
  EventEnvelope,
  HealthView,
  HeartbeatChecks,
  HeartbeatSettings,
  HeartbeatView,
  History,
  McpSecretField,
  McpView,
  Op,
  ProcessSummary,
  ProviderSettings,
  RoutineDraft,
  RoutineRun,
  RoutineSaved,
  RoutinesView,
  RoutineView,
  SchedulePreview,
  SessionSummary,
  SettingsView,
} from './protocol';
import type { Backend, Unlisten } from './backend';
import { inTauri, subscribeShell } from './shell';

// The shell's own events (quit prompt, notification clicks) live in shell.ts; imported from
// here like every other call into the Rust side.
export { FOCUS_EVENT, inTauri, onFocus, onQuitRequested, QUIT_EVENT } from './shell';
export type { FocusTarget, QuitRequest } from './shell';

/** The conversation that always exists (and cannot be deleted); ops without a session go to it. */
export const PRIMARY_SESSION = 'main';

/** The event the Rust side emits `EventEnvelope`s on, in batches (one per frame at most). */
export const EVENTS_NAME = 'vigil://events';

// What a backend is (Tauri's, or the mock's) is a file of its own, so the mock can say it
// implements one without importing this module.
export type { Backend, Unlisten } from './backend';

/** Every store's handler, fed from one subscription: each subscription is a script run in
 *  the page per delivery, so one for all is cheaper than one each. */
const handlers = new Set<(event: EventEnvelope) => void>();
let subscribed: Promise<Unlisten> | null = null;

/** Events since the early subscription, replayed to each handler that registers before the
 *  window's stores have all started ([`endEarly`]). */
let held: EventEnvelope[] | null = null;

/** What each store starts from, by command: asked for together as the window starts
 *  ([`startEarly`]), read by [`startStore`] and [`storeRead`]. */
export interface StartupReads {
  /** The primary conversation (the chat's; [`takeEarly`]). */
  history: History;
  /** The conversations, most recent first; always includes the primary one. */
  list_sessions: SessionSummary[];
  /** Every process the registry knows (running and recently finished). */
  list_processes: ProcessSummary[];
  /** Every routine and the state of `HEARTBEAT.md`'s task block. */
  list_routines: RoutinesView;
  /** The heartbeat's settings, last run, next run and counters. */
  heartbeat_view: HeartbeatView;
  /** The provider settings (never the key itself). */
  get_settings: SettingsView;
  /** The desktop preferences and problems reading them. */
  get_desktop_settings: DesktopSettingsView;
}
export const STARTUP_READS: readonly (keyof StartupReads)[] = [
  'history',
  'list_sessions',
  'list_processes',
  'list_routines',
  'heartbeat_view',
  'get_settings',
  'get_desktop_settings',
];

/** A read asked for before the window mounted, and how many held events came before it was
 *  asked: the ones after may be newer than its answer. */
interface EarlyRead<T> {
  answer: Promise<T>;
  from: number;
}
const earlyReads = new Map<keyof StartupReads, EarlyRead<unknown>>();

/** The read [`startEarly`] asked for `command`, once; null when there is none (the mock, or
 *  taken already, or every store has started). */
function takeEarlyRead<K extends keyof StartupReads>(command: K): EarlyRead<StartupReads[K]> | null {
  const early = earlyReads.get(command) as EarlyRead<StartupReads[K]> | undefined;
  earlyReads.delete(command);
  return early ?? null;
}

function subscribe(): Promise<Unlisten> {
  subscribed ??= listen<EventEnvelope[]>(EVENTS_NAME, (e) => {
    held?.push(...e.payload);
    const now = [...handlers];
    for (const event of e.payload) for (const h of now) h(event);
  });
  return subscribed;
}

/**
 * Before the window mounts: subscribes to events and to the shell's own (a notification
 * clicked, a quit asked), then asks for the primary conversation and every store's first
 * read at once, so the first paint already shows them. Answered while the page is idle these
 * are quick round trips in parallel; asked from the mounted window, each waited behind the
 * first paint and changed the window again after it. Events from the subscription on are
 * held and replayed to every store's handler as it registers, until [`endEarly`], so none
 * between the subscription and a store's start is lost (an approval asked or an update
 * delivered in that moment). Resolves when all are in or failed.
 */
export async function startEarly(): Promise<void> {
  if (!inTauri()) return;
  held = [];
  // Theirs are retried when their handlers come (`on`).
  subscribeShell();
  try {
    await subscribe();
  } catch {
    subscribed = null;
    held = null;
    return;
  }
  for (const command of STARTUP_READS) earlyReads.set(command, { answer: call(command), from: held.length });
  await Promise.allSettled([...earlyReads.values()].map((r) => r.answer));
}

/** The primary history [`startEarly`] asked for, once. */
export function takeEarly(): Promise<History> | null {
  return takeEarlyRead('history')?.answer ?? null;
}

/** Every store has started: events are no longer held for handlers still to come. */
export function endEarly(): void {
  held = null;
  earlyReads.clear();
}

/** How a store's start went: its handler's unlisten (a no-op when the subscription failed)
 *  and the first failure of the subscription or the read, if any. */
export interface StoreStart {
  unlisten: Unlisten;
  error: CommandError | null;
}

/**
 * A store's start: `apply` gets its first read (`command`) and `handler` every event after
 * it, so an answer older than an event never lands on top of it. The read [`startEarly`]
 * asked for is applied first, then the events held since it was asked (they may repeat what
 * it says, so handlers apply events idempotently); without one the handler registers first
 * and the read is asked after. A failed subscription skips the read, as nothing would keep it
 * current.
 */
export async function startStore<K extends keyof StartupReads>(
  command: K,
  apply: (answer: StartupReads[K]) => void,
  handler: (event: EventEnvelope) => void,
): Promise<StoreStart> {
  const early = takeEarlyRead(command);
  let error: CommandError | null = null;
  if (early !== null) {
    try {
      apply(await early.answer);
    } catch (e) {
      error = toCommandError(e);
    }
  }
  let unlisten: Unlisten;
  try {
    unlisten = await onEvent(handler, early?.from ?? 0);
  } catch (e) {
    return { unlisten: () => {}, error: error ?? toCommandError(e) };
  }
  if (early === null) {
    try {
      apply(await call<StartupReads[K]>(command));
    } catch (e) {
      error = toCommandError(e);
    }
  }
  return { unlisten, error };
}

/** A read of a store without events to follow (settings): the answer [`startEarly`] got if
 *  this is its first, else asked now. */
export function storeRead<K extends keyof StartupReads>(command: K): Promise<StartupReads[K]> {
  return takeEarlyRead(command)?.answer ?? call<StartupReads[K]>(command);
}

const tauriBackend: Backend = {
  invoke: (command, args) => invoke(command, args),
  listen: async (handler, from = 0) => {
    handlers.add(handler);
    // Registered while the window starts: the events since the early subscription (or since
    // `from` of them) first.
    for (const event of held?.slice(from) ?? []) handler(event);
    try {
      await subscribe();
    } catch (e) {
      handlers.delete(handler);
      subscribed = null;
      throw e;
    }
    return () => handlers.delete(handler);
  },
};

function notReady(): CommandError {
  return {
    code: 'not_ready',
    message: 'This page is not running inside the Vigil app. Add ?mock to the URL to preview it with sample data.',
  };
}

const unavailableBackend: Backend = {
  invoke: () => Promise.reject(notReady()),
  listen: () => Promise.reject(notReady()),
};


let chosen: Promise<Backend> | null = null;

function backend(): Promise<Backend> {
  chosen ??= pickBackend();
  return chosen;
}

async function pickBackend(): Promise<Backend> {
  if (inTauri()) return tauriBackend;
  if (new URLSearchParams(window.location.search).has('mock')) {
    const { createMockBackend } = await import('./mock');
    return createMockBackend(new URLSearchParams(window.location.search).get('mock') ?? '');
  }
  return unavailableBackend;
}

/** Normalises whatever a rejected call produced into the wire error shape. */
export function toCommandError(e: unknown): CommandError {
  if (e && typeof e === 'object' && 'message' in e && typeof e.message === 'string') {
    const code = 'code' in e && typeof e.code === 'string' ? e.code : 'unknown';
    const field = 'field' in e && typeof e.field === 'string' ? e.field : undefined;
    return field === undefined ? { code, message: e.message } : { code, message: e.message, field };
  }
  if (typeof e === 'string') return { code: 'unknown', message: e };
  return { code: 'unknown', message: 'Something went wrong.' };
}

async function call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await (await backend()).invoke<T>(command, args);
  } catch (e) {
    throw toCommandError(e);
  }
}

/** Sends one op (a user message, an interrupt…); returns as soon as the core has it. */
export function submit(op: Op): Promise<void> {
  return call('submit', { op });
}

/** The saved conversation; without an id, the primary session. */
export function history(sessionId?: string): Promise<History> {
  return call('history', sessionId === undefined ? {} : { sessionId });
}

/**
 * Validates and saves provider settings. `apiKey`: `null`/absent keeps the stored key,
 * `""` forgets it, anything else replaces it.
 */
export function saveSettings(provider: ProviderSettings, apiKey: string | null = null): Promise<SettingsView> {
  return call('save_settings', { provider, apiKey });
}

/** Tries settings without saving them; `apiKey` (if given) is used instead of the stored key. */
export function testConnection(provider: ProviderSettings, apiKey: string | null = null): Promise<ConnectionVerdict> {
  return call('test_connection', { provider, apiKey });
}

/** Settings → Tools: every MCP server of `mcp.json`, its state and its tools. */
export function getMcp(): Promise<McpView> {
  return call('get_mcp');
}

/**
 * Adds the servers of a pasted `{"mcpServers": …}` config (a name already there is
 * replaced); the `secret` values go to the keyring. Refused as `invalid_mcp` on `json`.
 */
export function addMcpServers(json: string, secret: McpSecretField[]): Promise<McpView> {
  return call('add_mcp_servers', { json, secret });
}

/** Stops a server and removes it from `mcp.json`, with its keyring values. */
export function removeMcpServer(name: string): Promise<McpView> {
  return call('remove_mcp_server', { name });
}

/** A trusted server's calls run without asking (never under read-only). */
export function setMcpServerTrusted(name: string, trusted: boolean): Promise<McpView> {
  return call('set_mcp_server_trusted', { name, trusted });
}

export function restartMcpServer(name: string): Promise<McpView> {
  return call('restart_mcp_server', { name });
}

/** Raises a native notification through the same path background events use. */
export function notify(title: string, body: string): Promise<void> {
  return call('notify', { title, body });
}

/** The approval policy and the remembered "always" answers. */
export function getApprovals(): Promise<ApprovalsView> {
  return call('get_approvals');
}

/** Saves the policy; rejects (`invalid_settings`) while `VIGIL_APPROVAL_POLICY` decides it. */
export function setApprovalPolicy(policy: ApprovalPolicy): Promise<ApprovalsView> {
  return call('set_approval_policy', { policy });
}

/** Forgets one remembered "always"; the next such request is asked again. */
export function forgetApproval(kind: ApprovalKind, prefix: string): Promise<ApprovalsView> {
  return call('forget_approval', { kind, prefix });
}

/** "Your own turns' commands may use the network" for sandboxed commands; saved at once. */
export function setSandboxNetwork(on: boolean): Promise<ApprovalsView> {
  return call('set_sandbox_network', { on });
}

/** "Runs nobody watches may use the network" (heartbeat, routines, continuations); saved at once. */
export function setSandboxUnattendedNetwork(on: boolean): Promise<ApprovalsView> {
  return call('set_sandbox_unattended_network', { on });
}

/** Replaces the Unix sockets the user's own turns' commands may use; a refused one rejects
 *  with `invalid_socket` on field `sockets`, and nothing is saved. */
export function setSandboxSockets(sockets: string[]): Promise<ApprovalsView> {
  return call('set_sandbox_sockets', { sockets });
}

/** "This routine may use the network" (its jobs, while runs nobody watches may not); saved at once. */
export function setRoutineNetwork(id: string, on: boolean): Promise<ApprovalsView> {
  return call('set_routine_network', { id, on });
}

/**
 * Replaces the paths every sandbox shows empty (`~/…` or full paths, no `..`; an empty list
 * hides nothing). The core tidies them; a refused entry rejects with `invalid_path` on field
 * `hidden`, and nothing is saved.
 */
export function setSandboxHidden(hidden: string[]): Promise<ApprovalsView> {
  return call('set_sandbox_hidden', { hidden });
}

/**
 * Replaces the sandbox's extra writable folders (full paths to existing folders). A refused
 * folder rejects with `invalid_folder` on field `writable`, and nothing is saved.
 */
export function setSandboxWritable(folders: string[]): Promise<ApprovalsView> {
  return call('set_sandbox_writable', { folders });
}

/** The heartbeat's settings, last run, next run and counters. */
export function heartbeatView(): Promise<HeartbeatView> {
  return call('heartbeat_view');
}

/** How the runtime is doing: what runs now, lock waits, deliveries, counters since start. */
export function health(): Promise<HealthView> {
  return call('health');
}

/**
 * Saves heartbeat settings; they apply without a restart. Rejects (`invalid_settings`, the
 * message naming the bad value) without saving anything.
 */
export function saveHeartbeatSettings(settings: HeartbeatSettings): Promise<HeartbeatView> {
  return call('save_heartbeat_settings', { settings });
}

/** A process's kept raw terminal bytes, base64, to replay them in the panel's terminal. */
export function processOutput(processId: string): Promise<string> {
  return call('process_output', { processId });
}

/** Every routine and the state of `HEARTBEAT.md`'s task block. */
export function listRoutines(): Promise<RoutinesView> {
  return call('list_routines');
}

/** Creates a routine; rejects (`invalid_routine`, with the `field`) without saving anything. */
export function addRoutine(draft: RoutineDraft): Promise<RoutineSaved> {
  return call('add_routine', { draft });
}

/** Changes the fields the draft names; rejects like `addRoutine`. */
export function updateRoutine(id: string, draft: RoutineDraft): Promise<RoutineView> {
  return call('update_routine', { id, draft });
}

/** Removes a routine: it stops and is listed as removed until restored. `hard` deletes it
 *  and its run history for good. */
export function removeRoutine(id: string, hard = false): Promise<void> {
  return call('remove_routine', { id, hard });
}

/** Brings a removed routine back as it was (a paused one stays paused). */
export function restoreRoutine(id: string): Promise<RoutineView> {
  return call('restore_routine', { id });
}

/** Runs a routine now; its schedule is unchanged. */
export function runRoutineNow(id: string): Promise<void> {
  return call('run_routine_now', { id });
}

/** Runs again, now, a routine whose run `runId` ended `unknown` (cut off after it changed
 *  something); its schedule is unchanged. */
export function retryRoutineRun(id: string, runId: string): Promise<void> {
  return call('retry_routine_run', { id, runId });
}

/** Leaves a routine's `unknown` run as it is (the user checked; nothing to redo). */
export function dismissRoutineRun(id: string, runId: string): Promise<void> {
  return call('dismiss_routine_run', { id, runId });
}

/** Pauses (`false`) or resumes (`true`) a routine. */
export function setRoutineEnabled(id: string, enabled: boolean): Promise<RoutineView> {
  return call('set_routine_enabled', { id, enabled });
}

/** Approves a routine's check or URL as written now (its card showed what runs, how often,
 *  with what access). */
export function approveRoutine(id: string): Promise<RoutinesView> {
  return call('approve_routine', { id });
}

/** A routine's latest runs, oldest first. */
export function routineHistory(id: string): Promise<RoutineRun[]> {
  return call('routine_history', { id });
}

/** A schedule in words and its next runs, or why it cannot be used (same checks as saving). */
export function previewSchedule(schedule: string | null, timezone: string | null, nextRunAt: number | null = null): Promise<SchedulePreview> {
  return call('preview_schedule', { schedule, timezone, nextRunAt });
}

/** Replaces a corrupted task block with the last good snapshot; resolves to how many routines came back. */
export function restoreRoutines(): Promise<number> {
  return call('restore_routines');
}

/** Trusts HEARTBEAT.md as it is now, after it was held (replaced while a sandboxed command
 *  ran); resolves to the list, whose routines run again. */
export function trustHeartbeatFile(): Promise<RoutinesView> {
  return call('trust_heartbeat_file');
}

/** The free-text checks of `HEARTBEAT.md` (everything but the routines). */
export function heartbeatChecks(): Promise<HeartbeatChecks> {
  return call('heartbeat_checks');
}

/** Saves the checks; rejects (`invalid_checks`) if the file's checks are no longer `expected`. */
export function saveHeartbeatChecks(expected: string, text: string): Promise<HeartbeatChecks> {
  return call('save_heartbeat_checks', { expected, text });
}

/** Saves and applies at once; rejects (`autostart`) when the login item cannot be changed,
 *  (`invalid_workspace`, field `workspace`) for a folder that is not there. */
export function saveDesktopSettings(settings: DesktopSettings): Promise<DesktopSettingsView> {
  return call('save_desktop_settings', { settings });
}

/** The quit prompt's confirm: the app kills its processes and exits. */
export function quitApp(): Promise<void> {
  return call('quit');
}

/** The window is interactive (logged; the launch benchmark waits for it). */
export function uiReady(scriptMs: number, pageMs: number): Promise<void> {
  return call('ui_ready', { scriptMs, pageMs });
}

/** Tells the tray whether something needs the user (it shows a badge on its icon). */
export function setAttention(needed: boolean): Promise<void> {
  return call('set_attention', { needed });
}


/** Subscribes to every event the core emits; resolves once the listener is registered. */
export async function onEvent(handler: (event: EventEnvelope) => void, from = 0): Promise<Unlisten> {
  try {
    return await (await backend()).listen(handler, from);
  } catch (e) {
    throw toCommandError(e);
  }
}

/**
 * Hands an image the window holds (pasted, dropped or picked) to the app, which writes it
 * under the data folder; returns the path to send in `user_message`'s `attachments`.
 */
export async function stageAttachment(bytes: Uint8Array, mime: string): Promise<string> {
  if (!inTauri()) throw notReady();
  try {
    return await invoke<string>('stage_attachment', bytes, { headers: { 'x-mime': mime } });
  } catch (e) {
    throw toCommandError(e);
  }
}

/** The bytes of an image stored with a conversation. */
export function imageBlob(sessionId: string, sha256: string, mime: string): Promise<ArrayBuffer> {
  return call('image_blob', { sessionId, sha256, mime });
}
