// The routines for the pane: the list and the task block's state (`RoutinesView`, each
// routine with its latest run), a routine's history when it is unfolded, and the pane's
// actions. Refreshed on `routines_changed` (the
// agent's tools, the scheduler, a hand edit) whether or not the pane is open.

import * as ipc from '../lib/ipc';
import type { HeartbeatChecks, RoutineDraft, RoutineRun, RoutinesView } from '../lib/protocol';

export class RoutinesStore {
  view = $state.raw<RoutinesView | null>(null);
  /** The pane is showing. */
  open = $state(false);
  /** The routine the pane opens at (a result card's link), expanded and scrolled to. */
  focus = $state<string | null>(null);
  /** The last thing that went wrong with a list action (run now, delete…). */
  error = $state<string | null>(null);

  /** The free-text checks of HEARTBEAT.md as last loaded or saved. */
  checks = $state.raw<HeartbeatChecks | null>(null);
  /** Why the checks could not be loaded. */
  checksError = $state<string | null>(null);

  /** Bumped per request, so a slow answer never overwrites a newer one. */
  #asked = 0;

  /** The conversation open in the window: a routine made in the editor records it (its
   *  inline runs are turns there). */
  #conversation: () => string | null;

  constructor(conversation: () => string | null = () => null) {
    this.#conversation = conversation;
  }

  /** Opens the pane at routine `id`. */
  reveal(id: string): void {
    this.focus = id;
    this.open = true;
  }

  async start(): Promise<ipc.Unlisten> {
    const { unlisten, error } = await ipc.startStore(
      'list_routines',
      (view) => (this.view = view),
      (event) => {
        if (event.type !== 'routines_changed') return;
        this.view = event.routines;
      },
    );
    // A missing backend is reported by the chat store.
    if (error !== null && error.code !== 'not_ready') this.error = error.message;
    return unlisten;
  }

  async refresh(): Promise<void> {
    const asked = ++this.#asked;
    try {
      const view = await ipc.listRoutines();
      if (asked !== this.#asked) return;
      this.view = view;
    } catch (e) {
      if (asked === this.#asked) this.error = ipc.toCommandError(e).message;
    }
  }

  /** A routine's latest runs, oldest first: asked for when its row is unfolded. */
  history(id: string): Promise<RoutineRun[]> {
    return ipc.routineHistory(id);
  }

  /** Runs `action`, shows what went wrong, and refreshes either way. */
  async #act(action: () => Promise<unknown>): Promise<boolean> {
    try {
      await action();
      this.error = null;
      return true;
    } catch (e) {
      this.error = ipc.toCommandError(e).message;
      return false;
    } finally {
      await this.refresh();
    }
  }

  runNow(id: string): Promise<boolean> {
    return this.#act(() => ipc.runRoutineNow(id));
  }

  /** Runs again, now, routine `id`'s run `runId` whose outcome is unknown. */
  retryRun(id: string, runId: string): Promise<boolean> {
    return this.#act(() => ipc.retryRoutineRun(id, runId));
  }

  /** Leaves routine `id`'s run `runId`, whose outcome is unknown, as it is. */
  dismissRun(id: string, runId: string): Promise<boolean> {
    return this.#act(() => ipc.dismissRoutineRun(id, runId));
  }

  /** Approves routine `id`'s check or URL as written now (or resumes it after its rate limit). */
  approve(id: string): Promise<boolean> {
    return this.#act(() => ipc.approveRoutine(id));
  }

  setEnabled(id: string, enabled: boolean): Promise<boolean> {
    return this.#act(() => ipc.setRoutineEnabled(id, enabled));
  }

  /** Removes a routine so it can be restored; `hard` deletes it for good. */
  remove(id: string, hard = false): Promise<boolean> {
    return this.#act(() => ipc.removeRoutine(id, hard));
  }

  /** Brings a removed routine back. */
  restoreRemoved(id: string): Promise<boolean> {
    return this.#act(() => ipc.restoreRoutine(id));
  }

  /** Puts back the last good version of the task block. */
  restore(): Promise<boolean> {
    return this.#act(() => ipc.restoreRoutines());
  }

  /** Trusts HEARTBEAT.md as it is now, after it was held: its routines run again. */
  trustFile(): Promise<boolean> {
    return this.#act(() => ipc.trustHeartbeatFile());
  }

  /** Creates or changes a routine; throws the `CommandError` for the editor to place. */
  async save(id: string | null, draft: RoutineDraft): Promise<string[]> {
    const made = { ...draft, conversation_id: this.#conversation() ?? undefined };
    const warnings = id === null ? (await ipc.addRoutine(made)).warnings : (await ipc.updateRoutine(id, draft), []);
    await this.refresh();
    return warnings;
  }

  async loadChecks(): Promise<void> {
    try {
      this.checks = await ipc.heartbeatChecks();
      this.checksError = null;
    } catch (e) {
      this.checksError = ipc.toCommandError(e).message;
    }
  }

  /** Saves the checks over the text they were loaded as; throws the `CommandError`. */
  async saveChecks(text: string): Promise<void> {
    this.checks = await ipc.saveHeartbeatChecks(this.checks?.text ?? '', text);
  }
}
