import { describe, expect, it } from 'vitest';
import { BACKLOG_CAP, HIGH_WATER, tail, TerminalFeed, type FrameScheduler, type TermSink } from './feed';

const enc = new TextEncoder();
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** A terminal that parses when told to, recording what it got. */
class FakeTerm implements TermSink {
  written: string[] = [];
  queued: (() => void)[] = [];
  resets = 0;
  write(data: Uint8Array, cb?: () => void): void {
    this.written.push(dec(data));
    this.queued.push(() => cb?.());
  }
  reset(): void {
    this.resets += 1;
    this.written.push('<reset>');
  }
  parse(): void {
    const q = this.queued.splice(0);
    q.forEach((f) => f());
  }
}

class Frames implements FrameScheduler {
  next: (() => void) | null = null;
  request(run: () => void): number {
    this.next = run;
    return 1;
  }
  cancel(): void {
    this.next = null;
  }
  run(): void {
    const f = this.next;
    this.next = null;
    f?.();
  }
}

describe('the terminal feed', () => {
  it('writes once per frame, in order', () => {
    const term = new FakeTerm();
    const frames = new Frames();
    const feed = new TerminalFeed(term, () => new Uint8Array(), frames);
    feed.reset(enc.encode('start\r\n'));
    feed.append(enc.encode('a'));
    feed.append(enc.encode('b'));
    expect(term.written).toEqual(['<reset>', 'start\r\n']);
    frames.run();
    expect(term.written).toEqual(['<reset>', 'start\r\n', 'ab']);
  });

  it('pauses while the terminal is behind and restarts from the tail after a flood', () => {
    const term = new FakeTerm();
    const frames = new Frames();
    const kept = enc.encode('old\nnewest line\n');
    const feed = new TerminalFeed(term, () => kept, frames);
    feed.append(new Uint8Array(HIGH_WATER + 1).fill(0x41));
    frames.run();
    expect(term.written).toHaveLength(1);
    // Not parsed yet: more output waits instead of piling into the terminal.
    feed.append(enc.encode('x'));
    frames.run();
    expect(term.written).toHaveLength(1);
    // Too much waiting: dropped, and once the terminal catches up it starts over.
    feed.append(new Uint8Array(BACKLOG_CAP).fill(0x42));
    frames.run();
    expect(term.written).toHaveLength(1);
    term.parse();
    frames.run();
    expect(term.written.slice(1)).toEqual(['<reset>', 'old\nnewest line\n']);
  });

  it('waits for queued writes before a reset, so nothing old shows after it', () => {
    const term = new FakeTerm();
    const frames = new Frames();
    const feed = new TerminalFeed(term, () => new Uint8Array(), frames);
    feed.append(enc.encode('local'));
    frames.run();
    feed.reset(enc.encode('replay'));
    expect(term.written).toEqual(['local']);
    term.parse();
    frames.run();
    expect(term.written).toEqual(['local', '<reset>', 'replay']);
  });

  it('takes the tail from a line start', () => {
    expect(dec(tail(enc.encode('aaaa\nbbbb\ncc'), 8))).toBe('bbbb\ncc');
    expect(dec(tail(enc.encode('short'), 8))).toBe('short');
  });
});
