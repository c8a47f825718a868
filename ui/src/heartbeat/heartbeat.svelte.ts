// The heartbeat's view (settings, last run, next run, counters) for the status indicator
// and the settings section. Loaded on start and after each `heartbeat` event, and asked
// again where it may have moved on without one: once its next run is due (so "next 13:00"
// stays true after the core reschedules), after each turn (today's background tokens; a
// message of the user's ends the idle gate's stretch), and when the window shows again.
// Nothing is asked on a period, and nothing while the window is hidden in the tray. Also
// "Check now": a manual wake and its answer, shared by the status bar's popover and the
// Routines pane.

import { untrack } from 'svelte';
import { page } from '../lib/clock';
import * as ipc from '../lib/ipc';
import type { HeartbeatSettings, HeartbeatView } from '../lib/protocol';
import { CHECKING, IDLE, withCheckEvent, type CheckState } from './check';
import { withHeartbeatEvent } from './status';

/** After the next run's time, the wait for the core to have run or moved it. */
export const DUE_SLACK_MS = 1000;
/** A next run already past when the view came (a run under way): asked again this much later. */
export const OVERDUE_RETRY_MS = 30_000;

/** How long until the view should be asked again for its next run at `at`. */
export function untilDue(at: number, now: number): number {
  return at > now ? at - now + DUE_SLACK_MS : OVERDUE_RETRY_MS;
}

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
        if (event.type === 'turn_finished') {
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
    const stopWatching = $effect.root(() => this.#watch());
    return () => {
      unlisten();
      stopWatching();
    };
  }

  #watch(): void {
    // The next run's time: asked again once it is due, while the window shows.
    $effect(() => {
      const at = this.view?.next_run_at ?? null;
      if (at === null || !page.visible) return;
      const timer = setTimeout(() => void this.refresh(), untilDue(at, Date.now()));
      return () => clearTimeout(timer);
    });
    // Back from the tray: whatever happened meanwhile without an event.
    let shown = page.visible;
    $effect(() => {
      const visible = page.visible;
      if (visible && !shown) untrack(() => void this.refresh());
      shown = visible;
    });
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
