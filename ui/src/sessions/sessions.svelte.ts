// The conversations for the sidebar: the list, the one shown, which have a turn running
// and which of those Vigil started on its own. Listens to the event stream itself (sessions_changed, turn start/finish) and
// asks the owner to show another session through `onOpen`.

import * as ipc from '../lib/ipc';
import { PRIMARY_SESSION } from '../lib/ipc';
import type { EventEnvelope, Op, SessionSummary } from '../lib/protocol';
import { continuationOp, onSessionsChanged, renamed, trackActivity, trackUnattended } from './state';

export class SessionsStore {
  list = $state.raw<SessionSummary[]>([]);
  active = $state(PRIMARY_SESSION);
  /** Sessions with a turn running (the activity dot). */
  running = $state.raw<ReadonlySet<string>>(new Set());
  /** Sessions where a turn Vigil started on its own runs (a background command ended). */
  unattended = $state.raw<ReadonlySet<string>>(new Set());
  error = $state<string | null>(null);

  /** The ids there were when "New conversation" was pressed; null otherwise. */
  #creating: ReadonlySet<string> | null = null;

  readonly #onOpen: (sessionId: string, running: boolean) => void;

  constructor(onOpen: (sessionId: string, running: boolean) => void) {
    this.#onOpen = onOpen;
  }

  async start(): Promise<ipc.Unlisten> {
    const { unlisten, error } = await ipc.startStore(
      'list_sessions',
      (list) => (this.list = list),
      (event) => this.#onEvent(event),
    );
    this.error = error === null ? null : `Could not list the conversations: ${error.message}`;
    return unlisten;
  }

  select(sessionId: string): void {
    if (sessionId === this.active) return;
    this.active = sessionId;
    this.#onOpen(sessionId, this.running.has(sessionId));
  }

  async create(): Promise<void> {
    this.#creating = new Set(this.list.map((s) => s.id));
    if (!(await this.#submit({ type: 'create_session' }))) this.#creating = null;
  }

  async rename(sessionId: string, title: string): Promise<void> {
    const trimmed = title.trim();
    const old = this.list.find((s) => s.id === sessionId);
    if (!trimmed || !old || old.title === trimmed) return;
    this.list = renamed(this.list, sessionId, trimmed);
    if (!(await this.#submit({ type: 'rename_session', session_id: sessionId, title: trimmed }))) {
      this.list = renamed(this.list, sessionId, old.title);
    }
  }

  /** Turns continuing on its own here off (limit 0) or back to the global setting; the list follows `sessions_changed`. */
  async setContinuing(sessionId: string, on: boolean): Promise<void> {
    await this.#submit(continuationOp(sessionId, on));
  }

  async remove(sessionId: string): Promise<void> {
    if (sessionId === PRIMARY_SESSION) return;
    await this.#submit({ type: 'delete_session', session_id: sessionId });
  }

  async #submit(op: Op): Promise<boolean> {
    try {
      await ipc.submit(op);
      this.error = null;
      return true;
    } catch (e) {
      this.error = ipc.toCommandError(e).message;
      return false;
    }
  }

  #onEvent(event: EventEnvelope): void {
    this.running = trackActivity(this.running, event);
    this.unattended = trackUnattended(this.unattended, event);
    if (event.type !== 'sessions_changed') return;
    const change = onSessionsChanged(event.sessions, this.active, this.#creating);
    this.list = change.list;
    this.#creating = null;
    if (change.open !== null) this.select(change.open);
  }
}
