// A process's terminal output as the UI keeps it: raw bytes (escape sequences, split UTF-8
// characters and all — xterm.js makes sense of them), bounded to the newest ~1 MB, and the
// rule for joining the core's replay with events that arrived while it was being fetched.

/** Bytes kept per process; the core keeps 512 KiB, so this holds at least as much. */
export const OUTPUT_CAP = 1024 * 1024;
/** When trimming, how far past the cut to look for a newline so the kept text starts on a line. */
const LINE_SEARCH = 4096;

export function decodeBase64(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  let size = 0;
  for (const c of chunks) size += c.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** The newest `cap` bytes of a stream, in the chunks they came in. */
export class OutputBuffer {
  #chunks: Uint8Array[] = [];
  #size = 0;
  /** Bytes dropped from the front so far. */
  dropped = 0;
  /**
   * True when every byte since the process started reached this buffer (the UI saw it
   * start); otherwise the core's replay is needed to fill in the beginning.
   */
  complete: boolean;

  constructor(
    complete: boolean,
    readonly cap = OUTPUT_CAP,
  ) {
    this.complete = complete;
  }

  get size(): number {
    return this.#size;
  }

  push(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.#chunks.push(bytes);
    this.#size += bytes.length;
    if (this.#size > this.cap) this.#trim();
  }

  /** Everything kept, as one array. */
  bytes(): Uint8Array {
    const all = concat(this.#chunks);
    if (this.#chunks.length > 1) this.#chunks = [all];
    return all.length === 0 ? new Uint8Array(0) : all;
  }

  /** Replaces the contents (the core's replay, already joined with later events). */
  replace(chunks: readonly Uint8Array[]): void {
    this.#chunks = chunks.filter((c) => c.length > 0);
    this.#size = this.#chunks.reduce((n, c) => n + c.length, 0);
    if (this.#size > this.cap) this.#trim();
  }

  #trim(): void {
    let excess = this.#size - this.cap;
    while (excess > 0 && this.#chunks[0].length <= excess) {
      const first = this.#chunks.shift() as Uint8Array;
      excess -= first.length;
      this.#size -= first.length;
      this.dropped += first.length;
    }
    const first = this.#chunks[0];
    if (!first) return;
    // Cut inside the first chunk, just after a newline when one is near, so the terminal
    // does not start in the middle of a line (or of an escape sequence on it).
    let cut = excess;
    const nl = first.subarray(cut, cut + LINE_SEARCH).indexOf(0x0a);
    if (nl >= 0) cut += nl + 1;
    if (cut === 0) return;
    this.#chunks[0] = first.subarray(cut);
    this.#size -= cut;
    this.dropped += cut;
    if (this.#chunks[0].length === 0) this.#chunks.shift();
  }
}

function endsWith(haystack: Uint8Array, needle: Uint8Array): boolean {
  if (needle.length > haystack.length) return false;
  const offset = haystack.length - needle.length;
  for (let i = 0; i < needle.length; i++) if (haystack[offset + i] !== needle[i]) return false;
  return true;
}

/**
 * The output after a replay: the core's kept bytes, then those of `during` (events that
 * arrived while the replay was fetched) that it does not already end with. The core took its
 * copy at some point among those events, so a prefix of them is in the replay and the rest
 * is not; the longest prefix the replay ends with is the one.
 */
export function joinReplay(replay: Uint8Array, during: readonly Uint8Array[]): Uint8Array[] {
  for (let j = during.length; j > 0; j--) {
    if (endsWith(replay, concat(during.slice(0, j)))) return [replay, ...during.slice(j)];
  }
  return [replay, ...during];
}
