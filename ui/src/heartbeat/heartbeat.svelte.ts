// The heartbeat's view (settings, last run, next run, counters) for the status indicator
// and the settings section. Loaded on start, after each `heartbeat` event, and every
// 30 s so "next 13:00" stays true after the core reschedules. Also "Check now": a manual
// wake and its answer, shared by the status bar's popover and the Routines pane.

import * as ipc from '../lib/ipc';
import type { HeartbeatSettings, HeartbeatView } from '../lib/protocol';
import { CHECKING, IDLE, withCheckEvent, type CheckState } from './check';
import { withHeartbeatEvent } from './status';

const REFRESH_MS = 30_000;

export class HeartbeatStore {
  view = $state.raw<HeartbeatView | null>(null);
  error = $state<string | null>(null);
  /** The last "Check now" and its answer (idle until the first). */
  check = $state.raw<CheckState>(IDLE);

  /** Bumped per request, so a slow answer never overwrites a newer one. */
  #asked = 0;

  async start(): Promise<ipc.Unlisten> {
    const { unlisten, error } = await ipc.startStore(
      'heartbeat_view',
      (view) => {
        this.view = view;
        this.error = null;
      },
      (event) => {
        if (event.type === 'background_paused') {
          if (this.view) this.view = { ...this.view, paused: event.paused };
          void this.refresh();
          return;
        }
        if (event.type !== 'heartbeat') return;
        this.check = withCheckEvent(this.check, event);
        this.view = withHeartbeatEvent(this.view, event);
        void this.refresh();
      },
    );
    // A missing backend is reported by the chat store.
    if (error !== null && error.code !== 'not_ready') this.error = error.message;
    const timer = setInterval(() => void this.refresh(), REFRESH_MS);
    return () => {
      unlisten();
      clearInterval(timer);
    };
  }

  async refresh(): Promise<void> {
    const asked = ++this.#asked;
    try {
      const view = await ipc.heartbeatView();
      if (asked !== this.#asked) return;
      this.view = view;
      this.error = null;
    } catch (e) {
      if (asked !== this.#asked) return;
      this.error = ipc.toCommandError(e).message;
    }
  }

  /** Asks for a heartbeat run now (a `manual` wake); its result lands in `check`, even when
   *  there is nothing to report. A second click while one is on its way does nothing. */
  async checkNow(): Promise<void> {
    if (this.check.phase === 'checking') return;
    this.check = CHECKING;
    try {
      await ipc.submit({ type: 'wake', reason: 'manual' });
    } catch (e) {
      this.check = { phase: 'done', text: `Could not ask for a check: ${ipc.toCommandError(e).message}`, tone: 'danger' };
    }
  }

  /** Throws a `CommandError` (`invalid_settings` names the bad value) for the form to show. */
  async save(settings: HeartbeatSettings): Promise<HeartbeatView> {
    const view = await ipc.saveHeartbeatSettings(settings);
    // A refresh still on its way may predate the save; its answer must not undo it.
    this.#asked += 1;
    this.view = view;
    this.error = null;
    return view;
  }
}
