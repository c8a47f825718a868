// The heartbeat's view in an idle window: asked for again when its next run is due (and
// after a turn, which spends tokens), never on a period, and not while the window is hidden
// in the tray; shown again, it is asked at once.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync } from 'svelte';
import type { EventEnvelope, HeartbeatView } from '../lib/protocol';
import { ev } from '../chat/testing';

const ipc = vi.hoisted(() => ({
  handler: null as ((e: EventEnvelope) => void) | null,
  asked: 0,
  nextRunAt: 0,
}));

vi.mock('../lib/ipc', () => ({
  startStore: async (_command: string, apply: (v: unknown) => void, h: (e: EventEnvelope) => void) => {
    ipc.handler = h;
    apply(view());
    return { unlisten: () => (ipc.handler = null), error: null };
  },
  heartbeatView: async () => {
    ipc.asked += 1;
    return view();
  },
  toCommandError: (e: unknown) => ({ code: 'unknown', message: String(e) }),
}));

const { HeartbeatStore } = await import('./heartbeat.svelte');

const MINUTE = 60_000;

function view(): HeartbeatView {
  return {
    settings: { enabled: true, every: '30m', ackMaxChars: 300, notifications: true, dailyTokenBudget: 0, idleAfterHours: 8, reflectionEveryHours: 24, reflectionAddsRoutines: false, runTimeoutMinutes: 10 },
    interval_ms: 30 * MINUTE,
    last_run_at: null,
    last_reason: null,
    last_status: null,
    last_skip_reason: null,
    last_detail: null,
    next_run_at: ipc.nextRunAt,
    warnings: [],
    stats: { runs: 0, sent: 0, suppressed: 0, failed: 0, skipped: {}, wakes_requested: 0, wakes_coalesced: 0 },
    paused: false,
    usage_today: { input_tokens: 0, output_tokens: 0 },
    last_usage: null,
    runs_today: 0,
    budget_spent: false,
    idle_factor: 1,
  };
}

function setVisibility(state: DocumentVisibilityState): void {
  Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => state });
  document.dispatchEvent(new Event('visibilitychange'));
  flushSync();
}

let stop: (() => void) | null = null;

async function started() {
  const store = new HeartbeatStore();
  stop = await store.start();
  flushSync();
  return store;
}

beforeEach(() => {
  vi.useFakeTimers({ now: Date.UTC(2026, 10, 24, 10, 0) });
  ipc.asked = 0;
  ipc.nextRunAt = Date.now() + 30 * MINUTE;
});

afterEach(() => {
  stop?.();
  stop = null;
  setVisibility('visible');
  vi.useRealTimers();
});

describe('the heartbeat view in an idle window', () => {
  it('is asked for again only once its next run is due', async () => {
    await started();
    await vi.advanceTimersByTimeAsync(29 * MINUTE);
    expect(ipc.asked).toBe(0);
    ipc.nextRunAt += 30 * MINUTE;
    await vi.advanceTimersByTimeAsync(2 * MINUTE);
    expect(ipc.asked).toBe(1);
    // The core moved the next run on: nothing until then.
    await vi.advanceTimersByTimeAsync(27 * MINUTE);
    expect(ipc.asked).toBe(1);
  });

  it('is asked for after a turn, which spends tokens', async () => {
    await started();
    ipc.handler!(ev({ type: 'turn_finished', stop_reason: 'end_turn', usage: { input_tokens: 900, output_tokens: 40 } }));
    await vi.advanceTimersByTimeAsync(0);
    expect(ipc.asked).toBe(1);
  });

  it('is not asked while the window is hidden, and is asked at once when it shows', async () => {
    await started();
    setVisibility('hidden');
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(90 * MINUTE);
    expect(ipc.asked).toBe(0);
    setVisibility('visible');
    await vi.advanceTimersByTimeAsync(0);
    expect(ipc.asked).toBe(1);
  });
});
