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
  HeartbeatChecks,
  HeartbeatSettings,
  HeartbeatView,
  History,
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

/** The conversation that always exists (and cannot be deleted); ops without a session go to it. */
export const PRIMARY_SESSION = 'main';

/** The event the Rust side emits `EventEnvelope`s on, in batches (one per frame at most). */
export const EVENTS_NAME = 'vigil://events';

export type Unlisten = () => void;

/** What the wrappers below need from a backend; the mock implements the same shape. */
export interface Backend {
  invoke<T>(command: string, args?: Record<string, unknown>): Promise<T>;
  listen(handler: (event: EventEnvelope) => void): Promise<Unlisten>;
}

/** Every store's handler, fed from one subscription: each subscription is a script run in
 *  the page per delivery, so one for all is cheaper than one each. */
const handlers = new Set<(event: EventEnvelope) => void>();
let subscribed: Promise<Unlisten> | null = null;

/** Events since the early subscription, replayed to each handler that registers before the
 *  window's stores have all started ([`endEarly`]). */
let held: EventEnvelope[] | null = null;
let earlyHistory: Promise<History> | null = null;

function subscribe(): Promise<Unlisten> {
  subscribed ??= listen<EventEnvelope[]>(EVENTS_NAME, (e) => {
    held?.push(...e.payload);
    const now = [...handlers];
    for (const event of e.payload) for (const h of now) h(event);
  });
  return subscribed;
}

/**
 * Before the window mounts: subscribes to events, then asks for the primary conversation,
 * so the first paint already shows it. Answered while the page is idle these are two quick
 * round trips; asked from the mounted window they waited behind its first paint. Events
 * from the subscription on are held and replayed to every store's handler as it registers,
 * until [`endEarly`], so none between the subscription and a store's start is lost (an
 * approval asked or an update delivered in that moment). Resolves when both are in or
 * failed.
 */
export async function startEarly(): Promise<void> {
  if (!inTauri()) return;
  held = [];
  try {
    await subscribe();
  } catch {
    subscribed = null;
    held = null;
    return;
  }
  earlyHistory = history(PRIMARY_SESSION);
  await earlyHistory.catch(() => {});
}

/** The primary history [`startEarly`] asked for, once. */
export function takeEarly(): Promise<History> | null {
  const taken = earlyHistory;
  earlyHistory = null;
  return taken;
}

/** Every store has started: events are no longer held for handlers still to come. */
export function endEarly(): void {
  held = null;
}

const tauriBackend: Backend = {
  invoke: (command, args) => invoke(command, args),
  listen: async (handler) => {
    handlers.add(handler);
    // Registered while the window starts: the events since the early subscription first.
    for (const event of held ?? []) handler(event);
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

/** True inside the Tauri webview. */
export function inTauri(): boolean {
  return typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;
}

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

/** The conversations, most recent first; always includes the primary one. */
export function listSessions(): Promise<SessionSummary[]> {
  return call('list_sessions');
}

/** The saved conversation; without an id, the primary session. */
export function history(sessionId?: string): Promise<History> {
  return call('history', sessionId === undefined ? {} : { sessionId });
}

export function getSettings(): Promise<SettingsView> {
  return call('get_settings');
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

/** The heartbeat's settings, last run, next run and counters. */
export function heartbeatView(): Promise<HeartbeatView> {
  return call('heartbeat_view');
}

/**
 * Saves heartbeat settings; they apply without a restart. Rejects (`invalid_settings`, the
 * message naming the bad value) without saving anything.
 */
export function saveHeartbeatSettings(settings: HeartbeatSettings): Promise<HeartbeatView> {
  return call('save_heartbeat_settings', { settings });
}

/** Every process the registry knows (running and recently finished), for the Processes panel. */
export function listProcesses(): Promise<ProcessSummary[]> {
  return call('list_processes');
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

export function removeRoutine(id: string): Promise<void> {
  return call('remove_routine', { id });
}

/** Runs a routine now; its schedule is unchanged. */
export function runRoutineNow(id: string): Promise<void> {
  return call('run_routine_now', { id });
}

/** Pauses (`false`) or resumes (`true`) a routine. */
export function setRoutineEnabled(id: string, enabled: boolean): Promise<RoutineView> {
  return call('set_routine_enabled', { id, enabled });
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

/** The free-text checks of `HEARTBEAT.md` (everything but the routines). */
export function heartbeatChecks(): Promise<HeartbeatChecks> {
  return call('heartbeat_checks');
}

/** Saves the checks; rejects (`invalid_checks`) if the file's checks are no longer `expected`. */
export function saveHeartbeatChecks(expected: string, text: string): Promise<HeartbeatChecks> {
  return call('save_heartbeat_checks', { expected, text });
}

/** The desktop preferences (close to tray, start at login, theme, notification kinds,
 *  workspace folder) and problems reading them. */
export function getDesktopSettings(): Promise<DesktopSettingsView> {
  return call('get_desktop_settings');
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

/** Quitting was asked for (tray Quit, or closing the window) while these processes run. */
export interface QuitRequest {
  processes: ProcessSummary[];
}

/** The event the shell emits to ask the window to confirm quitting. */
export const QUIT_EVENT = 'vigil://quit-requested';

/** Subscribes to quit requests; outside Tauri (the mock) there are none. */
export async function onQuitRequested(handler: (request: QuitRequest) => void): Promise<Unlisten> {
  if (!inTauri()) return () => {};
  return listen<QuitRequest>(QUIT_EVENT, (e) => handler(e.payload));
}

/** Where a clicked native notification leads (the shell brings the window forward first). */
export interface FocusTarget {
  /** The background update the notification announced. */
  event_id: string | null;
  /** The process whose exit it announced. */
  process_id: string | null;
}

/** The event the shell emits when the user clicks a notification. */
export const FOCUS_EVENT = 'vigil://focus';

/** Subscribes to notification clicks; outside Tauri (the mock) there are none. */
export async function onFocus(handler: (target: FocusTarget) => void): Promise<Unlisten> {
  if (!inTauri()) return () => {};
  return listen<FocusTarget>(FOCUS_EVENT, (e) => handler(e.payload));
}

/** Subscribes to every event the core emits; resolves once the listener is registered. */
export async function onEvent(handler: (event: EventEnvelope) => void): Promise<Unlisten> {
  try {
    return await (await backend()).listen(handler);
  } catch (e) {
    throw toCommandError(e);
  }
}
