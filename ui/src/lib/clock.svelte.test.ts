// The page's clocks: a reader that shows up between ticks starts from the time now (an
// approval card opened mid-minute says "in 1 h", not "in 1 h 1 min"), and every reader is
// brought up to date on the tick.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync } from 'svelte';
import { minuteClock } from './clock';

afterEach(() => vi.useRealTimers());

describe('the minute clock', () => {
  it('gives a reader arriving between ticks the time now, and ticks every reader on the minute', () => {
    vi.useFakeTimers({ now: Date.UTC(2026, 10, 24, 10, 0, 5) });
    const seen: Record<string, number[]> = { early: [], late: [] };
    const stopEarly = $effect.root(() => {
      $effect(() => void seen.early.push(minuteClock.now));
    });
    flushSync();
    vi.advanceTimersByTime(30_000);
    const stopLate = $effect.root(() => {
      $effect(() => void seen.late.push(minuteClock.now));
    });
    flushSync();
    expect(seen.late).toEqual([Date.UTC(2026, 10, 24, 10, 0, 35)]);
    vi.advanceTimersByTime(25_000);
    flushSync();
    expect(seen.early.at(-1)).toBe(Date.UTC(2026, 10, 24, 10, 1, 0));
    expect(seen.late.at(-1)).toBe(Date.UTC(2026, 10, 24, 10, 1, 0));
    stopEarly();
    stopLate();
  });
});
