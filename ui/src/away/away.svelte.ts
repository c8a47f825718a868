// The "While you were away" card's state: the latest `while_away` event until the user
// closes the card. One store for the window: the card is about the whole app, not one
// conversation.

import * as ipc from '../lib/ipc';
import type { AwaySummary } from '../lib/protocol';
import { withAwayEvent } from './away';

export class AwayStore {
  summary = $state.raw<AwaySummary | null>(null);

  async start(): Promise<ipc.Unlisten> {
    try {
      return await ipc.onEvent((event) => {
        this.summary = withAwayEvent(this.summary, event);
      });
    } catch {
      // The chat store reports a missing backend; nothing to add here.
      return () => {};
    }
  }

  dismiss(): void {
    this.summary = null;
  }
}
