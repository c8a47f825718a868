// What feeds one terminal: output is gathered and written once per animation frame, and
// when the terminal falls far behind (a flood, or a hidden window where frames stop) the
// backlog is dropped and the terminal restarts from the tail of the kept output instead of
// parsing megabytes the user will never see.

import { concat } from './output';

/** The part of xterm.js's `Terminal` the feed uses. */
export interface TermSink {
  write(data: Uint8Array, callback?: () => void): void;
  reset(): void;
}

export interface FrameScheduler {
  request(run: () => void): number;
  cancel(handle: number): void;
}

const browserFrames: FrameScheduler = {
  request: (run) => requestAnimationFrame(run),
  cancel: (handle) => cancelAnimationFrame(handle),
};

/** Bytes handed to the terminal and not yet parsed, above which writing pauses. */
export const HIGH_WATER = 512 * 1024;
/** Bytes waiting for a frame, above which they are dropped for a restart from the tail. */
export const BACKLOG_CAP = 1024 * 1024;
/** How much of the kept output a restart replays. */
export const RESTART_TAIL = 256 * 1024;

/** The last `max` bytes of `bytes`, starting after a newline when there is one. */
export function tail(bytes: Uint8Array, max: number): Uint8Array {
  if (bytes.length <= max) return bytes;
  const from = bytes.length - max;
  const nl = bytes.subarray(from).indexOf(0x0a);
  return bytes.subarray(nl >= 0 ? from + nl + 1 : from);
}

export class TerminalFeed {
  #pending: Uint8Array[] = [];
  #pendingSize = 0;
  #inFlight = 0;
  #frame: number | null = null;
  #overflowed = false;
  /** A restart asked for while writes were still being parsed; applied once they are. */
  #restartWith: Uint8Array | null = null;
  #disposed = false;

  constructor(
    private readonly term: TermSink,
    /** Everything kept for the process, for a restart. */
    private readonly kept: () => Uint8Array,
    private readonly frames: FrameScheduler = browserFrames,
  ) {}

  /**
   * Starts over with `bytes` (opening a process, or after the core's replay). xterm.js's
   * `reset` does not drop writes it has queued, so with some still unparsed it waits.
   */
  reset(bytes: Uint8Array): void {
    this.#pending = [];
    this.#pendingSize = 0;
    this.#overflowed = false;
    this.#restartWith = bytes;
    // Otherwise the last write's callback schedules it.
    if (this.#inFlight === 0) {
      this.#cancelFrame();
      this.flush();
    }
  }

  append(bytes: Uint8Array): void {
    if (this.#disposed || bytes.length === 0) return;
    if (this.#overflowed) return;
    this.#pending.push(bytes);
    this.#pendingSize += bytes.length;
    if (this.#pendingSize > BACKLOG_CAP) {
      this.#pending = [];
      this.#pendingSize = 0;
      this.#overflowed = true;
      this.#restartWith = null;
    }
    this.#schedule();
  }

  /** Writes what is waiting now (normally on the next frame). */
  flush(): void {
    this.#frame = null;
    if (this.#disposed) return;
    if (this.#overflowed && this.#restartWith === null) {
      this.#overflowed = false;
      this.#restartWith = tail(this.kept(), RESTART_TAIL);
    }
    if (this.#restartWith !== null) {
      if (this.#inFlight > 0) return;
      const bytes = this.#restartWith;
      this.#restartWith = null;
      this.term.reset();
      this.#write(bytes);
    }
    if (this.#inFlight > HIGH_WATER || this.#pendingSize === 0) return;
    const data = concat(this.#pending);
    this.#pending = [];
    this.#pendingSize = 0;
    this.#write(data);
  }

  dispose(): void {
    this.#disposed = true;
    this.#cancelFrame();
    this.#pending = [];
  }

  #write(data: Uint8Array): void {
    if (data.length === 0) return;
    this.#inFlight += data.length;
    this.term.write(data, () => {
      this.#inFlight -= data.length;
      // Writing paused while the terminal was behind (or a restart waits); resume once it
      // has caught up.
      const restart = this.#overflowed || this.#restartWith !== null;
      if ((restart && this.#inFlight === 0) || (!restart && this.#inFlight <= HIGH_WATER && this.#pendingSize > 0)) {
        this.#schedule();
      }
    });
  }

  #schedule(): void {
    if (this.#frame === null && !this.#disposed) this.#frame = this.frames.request(() => this.flush());
  }

  #cancelFrame(): void {
    if (this.#frame !== null) this.frames.cancel(this.#frame);
    this.#frame = null;
  }
}
