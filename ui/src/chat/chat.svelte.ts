// The chat's live state for the components: holds a `ChatState` (see state.ts for the
// rules), wires it to IPC, and batches incoming events so a fast token stream re-renders
// (and re-parses Markdown) at most once per animation frame.

import * as ipc from '../lib/ipc';
import type { EventEnvelope } from '../lib/protocol';
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

export class ChatStore {
  /** Replaced wholesale by the reducer, so `raw` (no deep proxies) is enough. */
  state = $state.raw<ChatState>(initialState());
  busy = $derived(isBusy(this.state));
  loaded = $state(false);

  #queue: EventEnvelope[] = [];
  #frame: number | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** Until history is in, events wait so de-duplication sees the saved messages. */
  #holding = true;

  /** Registers the event listener, then loads the transcript. */
  async start(): Promise<ipc.Unlisten> {
    let unlisten: ipc.Unlisten = () => {};
    try {
      unlisten = await ipc.onEvent((event) => this.#enqueue(event));
    } catch (e) {
      this.state = showBanner(this.state, { kind: 'ui', message: ipc.toCommandError(e).message });
    }
    try {
      this.state = withHistory(this.state, await ipc.history());
    } catch (e) {
      this.state = showBanner(this.state, {
        kind: 'ui',
        message: `Could not load the conversation: ${ipc.toCommandError(e).message}`,
      });
    }
    this.#holding = false;
    this.loaded = true;
    this.flush();
    return () => {
      unlisten();
      this.#cancelScheduled();
    };
  }

  /** Sends a message; false (and the text stays with the caller) if the core did not take it. */
  async send(text: string): Promise<boolean> {
    // An old error is about an earlier turn; the new one will report its own.
    const [next, key] = addPendingUser(dismissBanner(this.state), text, Date.now());
    this.state = next;
    try {
      await ipc.submit({ type: 'user_message', text });
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
      await ipc.submit({ type: 'interrupt' });
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
    this.state = state;
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
