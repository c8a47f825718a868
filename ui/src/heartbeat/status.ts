// The heartbeat's status line and diagnostics, pure: what the status bar says about the
// last run and the next one, the words for skip reasons and wake reasons, and how a
// `heartbeat` event updates the last view until `heartbeat_view()` answers again.

import { shortDate, shortTime } from '../lib/time';
import { costText, count } from '../lib/usage';
import type { EventEnvelope, HeartbeatSkip, HeartbeatStatus, HeartbeatView, WakeReason } from '../lib/protocol';

/** Formats a time for the status line; injected so tests do not depend on the locale. */
export type Clock = (ms: number) => string;

/** `12:30`, or `Mar 12, 12:30` when not today. */
export function clockTime(ms: number, now: number = Date.now()): string {
  const time = shortTime(ms);
  if (new Date(ms).toDateString() === new Date(now).toDateString()) return time;
  return `${shortDate(ms)}, ${time}`;
}

/** Short, for the status line: "skipped (busy)". */
export const SKIP_SHORT: Record<HeartbeatSkip, string> = {
  disabled: 'off',
  'quiet-hours': 'quiet hours',
  'requests-in-flight': 'busy',
  'empty-heartbeat-file': 'nothing to check',
  'heartbeat-file-error': 'HEARTBEAT.md unreadable',
  duplicate: 'duplicate',
  'no-provider': 'no provider',
  paused: 'paused',
  lock: 'another run',
  budget: 'budget spent',
};

/** Longer, for the details. */
export const SKIP_LONG: Record<HeartbeatSkip, string> = {
  disabled: 'the heartbeat is turned off',
  'quiet-hours': 'outside the active hours',
  'requests-in-flight': 'a conversation turn was running (it retries after 1 s, 2 s, 4 s … up to a minute)',
  'empty-heartbeat-file': 'HEARTBEAT.md has no checks in it',
  'heartbeat-file-error': 'HEARTBEAT.md could not be read',
  duplicate: 'the same text was delivered within the last 24 hours',
  'no-provider': 'no provider is configured',
  paused: 'background activity is paused (tray menu)',
  lock: 'another heartbeat run held its lock (it retries shortly)',
  budget: 'today’s token budget for background work is spent (it resumes tomorrow or when the budget is raised)',
};

export const REASON_LABEL: Record<WakeReason, string> = {
  interval: 'interval',
  'exec-event': 'background command finished',
  cron: 'routine',
  wake: 'wake request',
  hook: 'hook',
  manual: 'manual',
  retry: 'retry',
  reflection: 'daily reflection',
};

export const STATUS_LABEL: Record<HeartbeatStatus, string> = {
  'ok-token': 'ok (nothing to report)',
  'ok-empty': 'ok (empty reply)',
  sent: 'sent to you',
  skipped: 'skipped',
  failed: 'failed',
  'timed-out': 'timed out (ended at its deadline)',
};

/** `data-status` of the indicator: the last run's status, or why there is none. */
export type IndicatorState = HeartbeatStatus | 'off' | 'paused' | 'none' | 'unavailable';

export interface StatusLine {
  state: IndicatorState;
  /** "Heartbeat: ok 12:30 · next 13:00". */
  text: string;
  /** The parts, for narrow windows that show only `last`: "ok 12:30" and "next 13:00". */
  last: string;
  next: string;
}

function line(state: IndicatorState, last: string, next = ''): StatusLine {
  const text = `Heartbeat: ${[last, next].filter(Boolean).join(' · ')}`;
  return { state, text, last, next };
}

function skipShort(skip: HeartbeatSkip | null): string {
  return skip ? SKIP_SHORT[skip] : 'unknown reason';
}

/** What the last run did, in a few words ("ok", "skipped (busy)", "failed: …"). */
function lastWords(view: HeartbeatView): string {
  switch (view.last_status) {
    case 'ok-token':
    case 'ok-empty':
      return 'ok';
    case 'sent':
      return 'sent';
    case 'skipped':
      return `skipped (${skipShort(view.last_skip_reason)})`;
    case 'failed':
      return 'failed';
    case 'timed-out':
      return 'timed out';
    case null:
      return '';
  }
}

/** The status bar's line. `error`: `heartbeat_view()` could not be loaded. */
export function statusLine(view: HeartbeatView | null, error: string | null, clock: Clock = (ms) => clockTime(ms)): StatusLine {
  if (!view) return error ? line('unavailable', 'unavailable') : line('none', '…');
  if (!view.settings.enabled) return line('off', 'off');
  if (view.paused) return line('paused', 'paused');
  // Background model calls wait for tomorrow (or a higher budget): the bar says so.
  if (view.budget_spent) return line('paused', 'budget spent today', 'resumes tomorrow');
  const next = view.next_run_at !== null ? `next ${clock(view.next_run_at)}` : view.interval_ms === null ? 'no interval' : '';
  let last = '';
  if (view.last_status === 'failed') {
    // The detail says what to fix; when it happened is in the details.
    const detail = view.last_detail?.trim();
    last = detail ? `failed: ${detail}` : 'failed';
  } else if (view.last_status !== null) {
    last = view.last_run_at !== null ? `${lastWords(view)} ${clock(view.last_run_at)}` : lastWords(view);
  }
  if (!last && !next) return line(view.last_status ?? 'none', 'waiting');
  return line(view.last_status ?? 'none', last, next);
}

/**
 * The view after a `heartbeat` event, before the core's own view arrives: the last run is
 * the one just reported. Counters and the next run come with the refresh.
 */
export function withHeartbeatEvent(view: HeartbeatView | null, event: EventEnvelope): HeartbeatView | null {
  if (!view || event.type !== 'heartbeat') return view;
  return {
    ...view,
    last_run_at: event.ts,
    last_reason: event.reason,
    last_status: event.status,
    last_skip_reason: event.skip_reason ?? null,
    last_detail: event.detail ?? null,
    last_usage: event.usage ?? null,
  };
}

/**
 * The card's "Today" line: background work's tokens today (against the budget when one is
 * set), their cost where the provider reports it, and in how many runs.
 */
export function todayText(view: HeartbeatView): string {
  if (view.runs_today === 0) return 'no background runs yet';
  const u = view.usage_today;
  const cached = u.cache_read_tokens ?? 0;
  const budget = view.settings.dailyTokenBudget;
  return [
    `${count(u.input_tokens + u.output_tokens)}${budget > 0 ? ` of ${count(budget)}` : ''} tokens` +
      (cached > 0 ? ` (${count(cached)} cached)` : ''),
    (u.cost_micro_usd ?? 0) > 0 ? costText(u.cost_micro_usd ?? 0) : null,
    `${count(view.runs_today)} background ${view.runs_today === 1 ? 'run' : 'runs'}`,
  ]
    .filter((p) => p !== null)
    .join(' · ');
}

/** "45 s", "30 min", "1 h 30 min", "2 d". */
export function durationText(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return s % 60 === 0 ? `${min} min` : `${min} min ${s % 60} s`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d} d` : `${d} d ${h % 24} h`;
}

/** Skips by reason, most frequent first, with readable names. */
export function skippedRows(skipped: Record<string, number>): { reason: string; label: string; count: number }[] {
  return Object.entries(skipped)
    .filter(([, count]) => count > 0)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([reason, count]) => ({ reason, label: SKIP_SHORT[reason as HeartbeatSkip] ?? reason, count }));
}
