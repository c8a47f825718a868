// The chat's live state for the components: holds a `ChatState` (see state.ts for the
// rules), wires it to IPC, and batches incoming events so a fast token stream re-renders
// (and re-parses Markdown) at most once per animation frame.

import * as ipc from '../lib/ipc';
import { PRIMARY_SESSION } from '../lib/ipc';
import type { Attachment, EventEnvelope, History, Op } from '../lib/protocol';
import type { MessageTarget } from './reveal';
import {
  addPendingUser,
  applyEvent,
  dismissBanner,
  dropPending,
  initialState,
  isBusy,
  showBanner,
  withHistory,
  type ChatState,
} from './state';

/**
 * Events go through a queue flushed on the next animation frame, with a timer as a
 * backstop because a hidden or minimised webview stops running frames and the turn state
 * (busy, stop button) must still follow the core.
 */
const FLUSH_BACKSTOP_MS = 120;

/** What a clicked notification or search result leads to: a message (by id, or by time) or an approval's card. */
export type Reveal = MessageTarget | { approvalId: string };

export class ChatStore {
  /** Replaced wholesale by the reducer, so `raw` (no deep proxies) is enough. */
  state = $state.raw<ChatState>(initialState(PRIMARY_SESSION));
  busy = $derived(isBusy(this.state));
  /** The session shown and the one ops go to. */
  sessionId = $derived(this.state.sessionId ?? PRIMARY_SESSION);
  loaded = $state(false);
  /** An item to bring into view once it is on screen (a clicked notification's); the view clears it. */
  reveal = $state<Reveal | null>(null);

  #queue: EventEnvelope[] = [];
  #frame: number | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** Until history is in, events wait so de-duplication sees the saved messages. */
  #holding = true;
  /** Bumped per load, so a slow answer for a session switched away from is dropped. */
  #loads = 0;

  /** Registers the event listener, then loads the primary conversation. */
  async start(): Promise<ipc.Unlisten> {
    let unlisten: ipc.Unlisten = () => {};
    try {
      unlisten = await ipc.onEvent((event) => this.#enqueue(event));
    } catch (e) {
      this.state = showBanner(this.state, { kind: 'ui', message: ipc.toCommandError(e).message });
    }
    // The history asked for before the window mounted; the events since its subscription
    // reached the handler above as it registered (ipc.ts, startEarly).
    await this.#load(PRIMARY_SESSION, false, ipc.takeEarly() ?? undefined);
    return () => {
      unlisten();
      this.#cancelScheduled();
    };
  }

  /**
   * Shows another conversation. `running`: a turn is under way there (the sidebar knows),
   * so Stop shows and calls without a result yet count as running.
   */
  async open(sessionId: string, running: boolean): Promise<void> {
    if (sessionId === this.state.sessionId && this.loaded) return;
    // Events already queued belong to the old view; the reducer drops other sessions'.
    this.flush();
    this.state = initialState(sessionId);
    this.loaded = false;
    await this.#load(sessionId, running);
  }

  /**
   * Brings the saved message `messageId` of the conversation shown (or being opened) into
   * view. One saved after the conversation was loaded came as an event, which names no id:
   * the conversation is loaded again, so its id is among the loaded ones.
   */
  async revealSaved(messageId: string): Promise<void> {
    this.reveal = { messageId };
    if (!this.loaded || this.state.savedRows?.has(messageId)) return;
    this.flush();
    this.loaded = false;
    await this.#load(this.sessionId, this.busy);
  }

  async #load(sessionId: string, running: boolean, asked?: Promise<History>): Promise<void> {
    const load = ++this.#loads;
    this.#holding = true;
    try {
      const history = await (asked ?? ipc.history(sessionId));
      if (load !== this.#loads) return;
      this.state = withHistory(this.state, history, running);
    } catch (e) {
      if (load !== this.#loads) return;
      this.state = showBanner(this.state, {
        kind: 'ui',
        message: `Could not load the conversation: ${ipc.toCommandError(e).message}`,
      });
    }
    this.#holding = false;
    this.loaded = true;
    this.flush();
  }

  /**
   * Sends a message with its images (each handed to the app as a file first); false (and
   * the message stays with the caller) if the core did not take it.
   */
  async send(text: string, images: File[] = []): Promise<boolean> {
    // An old error is about an earlier turn; the new one will report its own.
    const [next, key] = addPendingUser(dismissBanner(this.state), text, Date.now(), this.busy, images.length);
    this.state = next;
    try {
      const attachments: Attachment[] = [];
      for (const image of images) {
        const path = await ipc.stageAttachment(new Uint8Array(await image.arrayBuffer()), image.type);
        // Staged under a generated name: a refusal must name the file the user knows.
        attachments.push(image.name ? { path, name: image.name } : { path });
      }
      const op: Extract<Op, { type: 'user_message' }> = { type: 'user_message', text, session_id: this.sessionId };
      if (attachments.length > 0) op.attachments = attachments;
      await ipc.submit(op);
      return true;
    } catch (e) {
      this.state = showBanner(dropPending(this.state, key), {
        kind: 'ui',
        message: `The message was not sent: ${ipc.toCommandError(e).message}`,
      });
      return false;
    }
  }

  async stop(): Promise<void> {
    try {
      await ipc.submit({ type: 'interrupt', session_id: this.sessionId });
    } catch (e) {
      this.state = showBanner(this.state, { kind: 'ui', message: `Could not stop: ${ipc.toCommandError(e).message}` });
    }
  }

  dismissBanner(): void {
    this.state = dismissBanner(this.state);
  }

  /** Applies every queued event now. */
  flush(): void {
    this.#cancelScheduled();
    if (this.#holding || this.#queue.length === 0) return;
    let state = this.state;
    for (const event of this.#queue) state = applyEvent(state, event);
    this.#queue = [];
    if (state !== this.state) this.state = state;
  }

  #enqueue(event: EventEnvelope): void {
    this.#queue.push(event);
    if (this.#holding || this.#frame !== null || this.#timer !== null) return;
    this.#frame = requestAnimationFrame(() => this.flush());
    this.#timer = setTimeout(() => this.flush(), FLUSH_BACKSTOP_MS);
  }

  #cancelScheduled(): void {
    if (this.#frame !== null) cancelAnimationFrame(this.#frame);
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#frame = null;
    this.#timer = null;
  }
}
