// The user's search over every conversation, job and heartbeat run: what is typed goes to
// the runtime (`search_history`) a moment after the last key, and only the answer to what
// the box says now is shown (an answer to an older query, typed past, is dropped).

import * as ipc from '../lib/ipc';
import type { EventEnvelope, HistoryHit } from '../lib/protocol';

/** Quiet time after a key before searching: results follow typing, not every key. */
export const SEARCH_DELAY_MS = 120;

/** The hits an event brings for the query the box holds now; null when it is not such an answer. */
export function resultsFor(query: string, event: EventEnvelope): HistoryHit[] | null {
  if (event.type !== 'history_results') return null;
  return event.query === query.trim() ? event.hits : null;
}

/** "Build fixes", else what kind of run it was. */
export function hitTitle(hit: HistoryHit): string {
  if (hit.title) return hit.title;
  if (hit.kind === 'job') return 'Routine job';
  if (hit.kind === 'heartbeat') return 'Heartbeat';
  return 'Conversation';
}

export class SearchStore {
  query = $state('');
  hits = $state.raw<HistoryHit[]>([]);
  /** A search is out for the query shown. */
  searching = $state(false);
  error = $state<string | null>(null);
  #timer: ReturnType<typeof setTimeout> | null = null;

  async start(): Promise<ipc.Unlisten> {
    return ipc.onEvent((event) => {
      const hits = resultsFor(this.query, event);
      if (hits === null) return;
      this.hits = hits;
      this.searching = false;
    });
  }

  set(query: string): void {
    this.query = query;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const words = query.trim();
    if (!words) {
      this.hits = [];
      this.searching = false;
      return;
    }
    this.searching = true;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      ipc.submit({ type: 'search_history', query: words }).then(
        () => (this.error = null),
        (e) => {
          this.error = ipc.toCommandError(e).message;
          this.searching = false;
        },
      );
    }, SEARCH_DELAY_MS);
  }

  clear(): void {
    this.set('');
  }
}
