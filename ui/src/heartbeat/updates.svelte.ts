// Background updates for the components: listens to the event stream (see updates.ts for
// the rules), counts what is unread per session for the badges, and carries the bell's
// request to show a card to the chat view. One store for the window, so cards survive
// switching conversations.

import * as ipc from '../lib/ipc';
import {
  applyUpdateEvent,
  initialUpdates,
  markSeen,
  oldestUnseen,
  unseenBySession,
  type UpdatesState,
} from './updates';

export class UpdatesStore {
  /** Replaced wholesale by the reducer, so `raw` is enough. */
  state = $state.raw<UpdatesState>(initialUpdates());
  /** Unread updates not looked at yet, per session (the sidebar's counts). */
  unseen = $derived(unseenBySession(this.state));
  /** All of them (the header's bell). */
  total = $derived([...this.unseen.values()].reduce((a, b) => a + b, 0));
  /** A card the chat view should scroll to; it clears this once done. */
  focus = $state<string | null>(null);

  async start(): Promise<ipc.Unlisten> {
    try {
      return await ipc.onEvent((event) => {
        this.state = applyUpdateEvent(this.state, event);
      });
    } catch {
      // The chat store reports a missing backend; nothing to add here.
      return () => {};
    }
  }

  /**
   * A clicked notification: the card it announced is to be shown. Returns its session, or
   * null when the card is not known here.
   */
  revealEvent(eventId: string): string | null {
    const target = this.state.updates.find((u) => u.event_id === eventId);
    if (!target) return null;
    this.state = markSeen(this.state, target.sessionId);
    this.focus = target.event_id;
    return target.sessionId;
  }

  /**
   * The bell: the oldest unread card is to be shown, and that session's updates leave the
   * badges. Returns the session to open, or null when nothing is unread.
   */
  reveal(): string | null {
    const target = oldestUnseen(this.state);
    if (!target) return null;
    this.state = markSeen(this.state, target.sessionId);
    this.focus = target.event_id;
    return target.sessionId;
  }
}
