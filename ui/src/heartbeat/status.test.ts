import { describe, expect, it } from 'vitest';
import type { HeartbeatView } from '../lib/protocol';
import { ev } from '../chat/testing';
import { durationText, skippedRows, statusLine, todayText, withHeartbeatEvent } from './status';

const HOUR = 3_600_000;
const at = (h: number, m: number) => Date.UTC(2026, 4, 1, h, m);
/** Locale-free "HH:MM" in UTC. */
const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);

function view(patch: Partial<HeartbeatView> = {}): HeartbeatView {
  return {
    settings: { enabled: true, every: '30m', ackMaxChars: 300, notifications: true, dailyTokenBudget: 0, idleAfterHours: 8, reflectionEveryHours: 24, reflectionAddsRoutines: false, runTimeoutMinutes: 10 },
    interval_ms: 30 * 60_000,
    last_run_at: at(12, 30),
    last_reason: 'interval',
    last_status: 'ok-token',
    last_skip_reason: null,
    last_detail: null,
    last_usage: null,
    next_run_at: at(13, 0),
    warnings: [],
    stats: { runs: 3, sent: 1, suppressed: 2, failed: 0, skipped: {}, wakes_requested: 5, wakes_coalesced: 1 },
    paused: false,
    usage_today: { input_tokens: 0, output_tokens: 0 },
    runs_today: 0,
    budget_spent: false,
    idle_factor: 1,
    ...patch,
  };
}

/** State and full text only. */
function short(v: HeartbeatView | null, error: string | null = null) {
  const { state, text } = statusLine(v, error, clock);
  return { state, text };
}

describe('heartbeat status line', () => {
  it('says what the last run did and when the next one is, for every status', () => {
    expect(statusLine(view(), null, clock)).toEqual({
      state: 'ok-token',
      text: 'Heartbeat: ok 12:30 · next 13:00',
      last: 'ok 12:30',
      next: 'next 13:00',
    });
    expect(short(view({ last_status: 'ok-empty' }))).toEqual({ state: 'ok-empty', text: 'Heartbeat: ok 12:30 · next 13:00' });
    expect(short(view({ last_status: 'sent' }))).toEqual({ state: 'sent', text: 'Heartbeat: sent 12:30 · next 13:00' });
    expect(short(view({ last_status: 'skipped', last_skip_reason: 'requests-in-flight', next_run_at: at(12, 31) }))).toEqual({
      state: 'skipped',
      text: 'Heartbeat: skipped (busy) 12:30 · next 12:31',
    });
    expect(statusLine(view({ last_status: 'skipped', last_skip_reason: 'quiet-hours' }), null, clock).text).toBe(
      'Heartbeat: skipped (quiet hours) 12:30 · next 13:00',
    );
    expect(short(view({ last_status: 'failed', last_detail: 'The provider timed out.' }))).toEqual({
      state: 'failed',
      text: 'Heartbeat: failed: The provider timed out. · next 13:00',
    });
    expect(statusLine(view({ last_status: 'failed', last_detail: null, next_run_at: null }), null, clock).text).toBe(
      'Heartbeat: failed',
    );
    expect(short(view({ last_status: 'timed-out', last_detail: 'timed out after 10 min (…)' }))).toEqual({
      state: 'timed-out',
      text: 'Heartbeat: timed out 12:30 · next 13:00',
    });
  });

  it('says off when turned off, whatever ran before', () => {
    const off = view({ settings: { ...view().settings, enabled: false }, next_run_at: null });
    expect(short(off)).toEqual({ state: 'off', text: 'Heartbeat: off' });
  });

  it('says paused while background activity is paused from the tray, and off wins over it', () => {
    expect(short(view({ budget_spent: true, last_status: 'skipped', last_skip_reason: 'budget' }))).toEqual({
      state: 'paused',
      text: 'Heartbeat: budget spent today · resumes tomorrow',
    });
    expect(short(view({ paused: true, last_status: 'skipped', last_skip_reason: 'paused' }))).toEqual({
      state: 'paused',
      text: 'Heartbeat: paused',
    });
    const off = view({ settings: { ...view().settings, enabled: false }, paused: true });
    expect(short(off).state).toBe('off');
  });

  it('covers no run yet, no interval, and no view', () => {
    expect(short(view({ last_run_at: null, last_status: null, last_reason: null }))).toEqual({
      state: 'none',
      text: 'Heartbeat: next 13:00',
    });
    expect(statusLine(view({ interval_ms: null, next_run_at: null }), null, clock).text).toBe('Heartbeat: ok 12:30 · no interval');
    expect(statusLine(view({ last_run_at: null, last_status: null, next_run_at: null }), null, clock).text).toBe('Heartbeat: waiting');
    expect(short(null)).toEqual({ state: 'none', text: 'Heartbeat: …' });
    expect(short(null, 'not_ready')).toEqual({ state: 'unavailable', text: 'Heartbeat: unavailable' });
  });

  it('takes the last run from a heartbeat event until the view is refreshed', () => {
    const event = { ...ev({ type: 'heartbeat', reason: 'exec-event', status: 'skipped', skip_reason: 'duplicate' }, null, null), ts: at(12, 45) };
    const next = withHeartbeatEvent(view({ last_status: 'failed', last_detail: 'old problem' }), event);
    expect(next).toEqual(
      view({ last_run_at: at(12, 45), last_reason: 'exec-event', last_status: 'skipped', last_skip_reason: 'duplicate', last_detail: null }),
    );
    expect(statusLine(next, null, clock).text).toBe('Heartbeat: skipped (duplicate) 12:45 · next 13:00');
    expect(withHeartbeatEvent(null, event)).toBeNull();
    const usage = { input_tokens: 3_140, output_tokens: 64, cache_read_tokens: 2_880 };
    const ran = { ...ev({ type: 'heartbeat', reason: 'interval', status: 'ok-token', usage }, null, null), ts: at(13, 0) };
    expect(withHeartbeatEvent(next, ran)?.last_usage, 'the tokens of the run just reported').toEqual(usage);
    expect(withHeartbeatEvent(withHeartbeatEvent(next, ran), event)?.last_usage, 'a skip used none').toBeNull();
  });

  it("sums up today's background tokens, against the budget when one is set", () => {
    expect(todayText(view())).toBe('no background runs yet');
    const today = { input_tokens: 41_200, output_tokens: 1_830, cache_read_tokens: 36_400, cost_micro_usd: 2_100 };
    expect(todayText(view({ usage_today: today, runs_today: 14 }))).toBe(
      '43,030 tokens (36,400 cached) · $0.0021 · 14 background runs',
    );
    const budget = view({ usage_today: { input_tokens: 900, output_tokens: 20 }, runs_today: 1 });
    budget.settings = { ...budget.settings, dailyTokenBudget: 50_000 };
    expect(todayText(budget)).toBe('920 of 50,000 tokens · 1 background run');
  });

  it('lists skips by reason and writes durations', () => {
    expect(skippedRows({ 'quiet-hours': 2, 'requests-in-flight': 5, duplicate: 0 })).toEqual([
      { reason: 'requests-in-flight', label: 'busy', count: 5 },
      { reason: 'quiet-hours', label: 'quiet hours', count: 2 },
    ]);
    expect([45_000, 30 * 60_000, 1.5 * HOUR, 48 * HOUR].map(durationText)).toEqual(['45 s', '30 min', '1 h 30 min', '2 d']);
  });
});
