// The `?mock` backend's heartbeat, after vigil-core `heartbeat/`: a run every ~20 s
// (instead of the interval, so a preview shows something) alternating "nothing to report"
// and an alert that lands in the primary conversation's mailbox as a background update; a
// run while the primary conversation is busy is skipped. A primary turn reads the mailbox
// and acknowledges what it read (`background_updates_read`) once it succeeds. Settings are
// checked as the core checks them. `?mock=heartbeat` starts with two unread updates. Only
// `mock.ts` imports this.

import type { BackgroundUpdate, Event, HeartbeatSettings, HeartbeatSkip, HeartbeatStats, HeartbeatStatus, HeartbeatView, WakeReason } from './protocol';

type Emit = (sessionId: string | null, runId: string | null, event: Event) => void;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const TICK_MS = 20_000;
const HEARTBEAT_SESSION = 'heartbeat_session_main';
const PRIMARY = 'main';

const ALERTS: { summary: string; detail?: string }[] = [
  {
    summary: 'Disk usage on `/` is at **91 %** — above your 80 % threshold.',
    detail:
      'Disk usage on `/` is at **91 %** — above your 80 % threshold.\n\nThe largest folders:\n\n| Folder | Size |\n|---|---|\n| `~/Downloads` | 38 GB |\n| `~/.cache` | 12 GB |\n\nEmptying `~/Downloads/old-isos` would free about 21 GB.',
  },
  { summary: 'Your 15:00 meeting moved to **15:30** (calendar check in HEARTBEAT.md).' },
  {
    summary: 'The nightly backup has not run since yesterday 02:00.',
    detail: 'The nightly backup has not run since yesterday 02:00.\n\n`restic snapshots` shows the last snapshot `4f1c2a9e` at 02:00 yesterday.',
  },
];

/** As the core's `parse_every`: a bare number is minutes; `0` turns interval runs off. */
function parseEvery(every: string): number | null | 'invalid' {
  const text = every.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) === 0 ? null : Number(text) * MINUTE;
  const units: Record<string, number> = { s: 1000, m: MINUTE, h: HOUR, d: 24 * HOUR };
  const parts = [...text.matchAll(/(\d+)\s*([smhd])/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('').replace(/\s/g, '') !== text.replace(/\s/g, '')) return 'invalid';
  const ms = parts.reduce((sum, p) => sum + Number(p[1]) * units[p[2]], 0);
  return ms === 0 ? null : ms;
}

function hhmm(text: string, allow24: boolean): boolean {
  const m = /^(\d{1,2}):(\d{2})$/.exec(text.trim());
  if (!m) return false;
  const [h, min] = [Number(m[1]), Number(m[2])];
  return (h === 24 && min === 0 && allow24) || (h <= 23 && min <= 59);
}

function zoneKnown(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The core's `HeartbeatConfig::resolve` warnings, word for word where it matters. */
function problems(s: HeartbeatSettings): string[] {
  const out: string[] = [];
  if (parseEvery(s.every) === 'invalid') {
    out.push(`Heartbeat interval "${s.every}" is not a duration (examples: 30m, 1h, 1h30m, or 45 for minutes); interval heartbeats are off until it is fixed.`);
  }
  if (s.ackMaxChars > 20_000) out.push(`Heartbeat ackMaxChars ${s.ackMaxChars} is out of range (0–20000); using 300.`);
  const hours = s.activeHours;
  if (hours) {
    const zone = hours.timezone?.trim();
    if (zone && zone.toLowerCase() !== 'local' && !zoneKnown(zone)) {
      out.push(`Active hours time zone "${zone}" is unknown (use an IANA name such as Europe/Berlin); using this computer's time zone.`);
    }
    if (!hhmm(hours.start, false) || !hhmm(hours.end, true)) {
      out.push(`Active hours "${hours.start}"–"${hours.end}" are not HH:MM times (00:00–23:59, end may be 24:00); the heartbeat runs at all hours until they are fixed.`);
    }
  }
  return out;
}

export function createMockHeartbeat(variant: string, emit: Emit, primaryBusy: () => boolean) {
  const now = Date.now();
  const preview = variant === 'heartbeat';
  let settings: HeartbeatSettings = { enabled: true, every: '30m', ackMaxChars: 300, notifications: true, dailyTokenBudget: 0, idleAfterHours: 8, reflectionEveryHours: 24, reflectionAddsRoutines: false, runTimeoutMinutes: 10 };
  const stats: HeartbeatStats = preview
    ? { runs: 14, sent: 2, suppressed: 11, failed: 1, skipped: { 'requests-in-flight': 3, 'quiet-hours': 6 }, wakes_requested: 31, wakes_coalesced: 7 }
    : { runs: 0, sent: 0, suppressed: 0, failed: 0, skipped: {}, wakes_requested: 0, wakes_coalesced: 0 };
  let last: { at: number; reason: WakeReason; status: HeartbeatStatus; skip: HeartbeatSkip | null; detail: string | null } | null = preview
    ? { at: now - 10 * MINUTE, reason: 'exec-event', status: 'sent', skip: null, detail: null }
    : null;
  let nextAt: number | null = null;
  /** Unread ids in the primary session's mailbox. */
  let mailbox: string[] = [];
  let runs = 0;
  let seq = 0;
  let timer: ReturnType<typeof setInterval> | null = null;

  const interval = () => {
    const ms = parseEvery(settings.every);
    return typeof ms === 'number' ? ms : null;
  };

  function view(): HeartbeatView {
    return {
      settings,
      interval_ms: interval(),
      last_run_at: last?.at ?? null,
      last_reason: last?.reason ?? null,
      last_status: last?.status ?? null,
      last_skip_reason: last?.skip ?? null,
      last_detail: last?.detail ?? null,
      last_usage: preview && last ? { input_tokens: 3_140, output_tokens: 64, cache_read_tokens: 2_880 } : null,
      next_run_at: settings.enabled && interval() !== null ? nextAt : null,
      warnings: problems(settings),
      stats: { ...stats, skipped: { ...stats.skipped } },
      paused: false,
      usage_today: preview ? { input_tokens: 41_200, output_tokens: 1_830, cache_read_tokens: 36_400 } : { input_tokens: 0, output_tokens: 0 },
      runs_today: preview ? 14 : 0,
      budget_spent: false,
      idle_factor: 1,
    };
  }

  function deposit(update: Omit<BackgroundUpdate, 'event_id'>): void {
    const event_id = `bg-${Date.now().toString(36)}-${++seq}`;
    mailbox.push(event_id);
    emit(PRIMARY, null, { type: 'background_update', update: { event_id, ...update }, unread: mailbox.length });
    if (settings.notifications) emit(PRIMARY, null, { type: 'notification', kind: 'heartbeat', title: 'Vigil needs your attention', body: update.summary, event_id });
  }

  function report(
    reason: WakeReason,
    status: HeartbeatStatus,
    skip: HeartbeatSkip | null = null,
    detail: string | null = null,
    retrying = false,
  ): void {
    last = { at: Date.now(), reason, status, skip, detail };
    emit(HEARTBEAT_SESSION, null, {
      type: 'heartbeat',
      reason,
      status,
      ...(skip ? { skip_reason: skip } : {}),
      ...(detail ? { detail } : {}),
      ...(retrying ? { retrying } : {}),
    });
  }

  function tick(): void {
    nextAt = Date.now() + TICK_MS;
    run('interval');
  }

  /** One run for `reason`: the interval's, or a wake's (Check now). A busy conversation
   *  holds a wake back and retries it, as the core's wake loop does. */
  function run(reason: WakeReason): void {
    stats.wakes_requested += 1;
    if (!settings.enabled) {
      if (reason !== 'interval') report(reason, 'skipped', 'disabled');
      return;
    }
    if (primaryBusy()) {
      stats.skipped['requests-in-flight'] = (stats.skipped['requests-in-flight'] ?? 0) + 1;
      const retrying = reason !== 'interval';
      if (retrying) setTimeout(() => run('retry'), 1000);
      return report(reason, 'skipped', 'requests-in-flight', null, retrying);
    }
    runs += 1;
    stats.runs += 1;
    if (runs % 2 === 1) {
      stats.suppressed += 1;
      return report(reason, 'ok-token');
    }
    // The preview's mailbox already holds the first alert.
    const alert = ALERTS[(runs / 2 - 1 + (preview ? 1 : 0)) % ALERTS.length];
    stats.sent += 1;
    deposit({ event_type: 'heartbeat_result', source: HEARTBEAT_SESSION, priority: 1, created_at: Date.now(), ...alert });
    report(reason, 'sent');
  }

  /** A `wake` op: runs after the core's 250 ms coalescing window. */
  function wake(reason: WakeReason): void {
    setTimeout(() => run(reason), 250);
  }

  /** The first listener is there: start the clock (and, for the preview, fill the mailbox). */
  function start(): void {
    if (timer !== null) return;
    nextAt = Date.now() + TICK_MS;
    timer = setInterval(tick, TICK_MS);
    if (!preview) return;
    // After every store has subscribed (they all do within the same start-up).
    setTimeout(() => {
      deposit({
        event_type: 'heartbeat_result',
        source: HEARTBEAT_SESSION,
        priority: 1,
        created_at: now - 2 * HOUR,
        ...ALERTS[0],
      });
      deposit({
        event_type: 'exec_completed',
        source: 'exec',
        priority: 0,
        created_at: now - 10 * MINUTE,
        summary: '`cargo test --workspace` finished: **212 passed**, 0 failed (3 m 41 s).',
        detail: '`cargo test --workspace` finished: **212 passed**, 0 failed (3 m 41 s).\n\n```\ntest result: ok. 212 passed; 0 failed; 4 ignored\n```',
      });
    }, 300);
  }

  /** `save_heartbeat_settings`: refused with the core's messages, nothing saved then. */
  function save(next: HeartbeatSettings): HeartbeatView {
    const found = problems(next);
    if (found.length > 0) throw { code: 'invalid_settings', message: found.join(' ') };
    settings = next;
    nextAt = Date.now() + TICK_MS;
    return view();
  }

  /** What a primary turn reads at its start. */
  function snapshot(): string[] {
    return [...mailbox];
  }

  /** The turn succeeded: those ids are read. */
  function acknowledge(ids: string[]): void {
    if (ids.length === 0) return;
    mailbox = mailbox.filter((id) => !ids.includes(id));
    emit(PRIMARY, null, { type: 'background_updates_read', event_ids: ids });
  }

  return { view, save, start, snapshot, acknowledge, wake };
}
