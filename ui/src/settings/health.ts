// The Settings pane's Health section, pure: a `HealthView` as a headline and rows of plain
// words. A row is flagged when it says something the user may want to act on (a lock that
// timed out or was taken back from a dead holder).
import { durationText, REASON_LABEL } from '../heartbeat/status';
import { costText, count as n } from '../lib/usage';
import type { HealthView, LaneHealth, WakeReason } from '../lib/protocol';
import { CHANNEL_NAME, channelLine } from './away';

export interface HealthRow {
  key: string;
  label: string;
  value: string;
  /** Worth a look: shown in the warning colour. */
  flagged: boolean;
}

export interface HealthSummary {
  headline: string;
  state: 'ok' | 'paused' | 'attention' | 'stopping';
  rows: HealthRow[];
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

function laneText(lane: LaneHealth): string {
  const what =
    lane.scope === 'heartbeat'
      ? 'the heartbeat'
      : lane.scope === 'job'
        ? `a routine job (${lane.session_id})`
        : lane.session_id === 'main'
          ? 'the main conversation'
          : `conversation ${lane.session_id}`;
  return lane.queued > 0 ? `${what}, ${plural(lane.queued, 'message')} queued` : what;
}

/** What the section shows for `h`. */
export function healthSummary(h: HealthView): HealthSummary {
  const up = `up ${durationText(h.uptime_ms)}`;
  const state: HealthSummary['state'] =
    h.status === 'shutting_down' ? 'stopping' : h.alerts.length > 0 ? 'attention' : h.paused ? 'paused' : 'ok';
  const headline = {
    stopping: 'Shutting down',
    attention: `Needs a look · ${up}`,
    paused: `Healthy, background activity paused · ${up}`,
    ok: `Healthy · ${up}`,
  }[state];
  const hb = h.heartbeat;
  const heartbeat = [
    hb.running ? 'running now' : null,
    `${hb.delivered} delivered`,
    `${hb.suppressed} nothing to report`,
    hb.skipped_busy > 0 ? `${hb.skipped_busy} put off while a turn ran` : null,
    hb.pending_wakes > 0 ? `${plural(hb.pending_wakes, 'wake')} waiting` : null,
    hb.handler_registered ? null : 'not started',
    backgroundTokens(hb),
    hb.idle_factor > 1 ? `interval ×${hb.idle_factor} while you are away` : null,
  ].filter((p) => p !== null);
  const l = h.locks;
  const waits =
    l.waited > 0
      ? `${l.waited} waited (longest ${l.wait_ms_max} ms, ${l.wait_ms_total} ms in all)`
      : 'none waited';
  const lockTrouble = l.timeouts > 0 || l.reclaimed > 0;
  const locks = [
    `${l.held} held`,
    `${l.acquired} taken`,
    waits,
    l.timeouts > 0 ? `${l.timeouts} gave up waiting` : null,
    l.reclaimed > 0 ? `${l.reclaimed} taken back from a stuck holder` : null,
  ].filter((p) => p !== null);
  const r = h.routines;
  const rows: HealthRow[] = [
    {
      key: 'running',
      label: 'Running now',
      value: h.lanes.length === 0 ? 'Nothing' : h.lanes.map(laneText).join('; '),
      flagged: false,
    },
    { key: 'heartbeat', label: 'Heartbeat', value: heartbeat.join(' · '), flagged: false },
    { key: 'wakes', label: 'Heartbeat wakes', value: wakesText(hb), flagged: false },
    { key: 'runs', label: 'Heartbeat runs', value: runsText(hb), flagged: false },
    {
      key: 'mailbox',
      label: 'Background updates',
      value: `${h.mailbox.waiting} waiting to be read · ${h.mailbox.deposited} arrived · ${h.mailbox.drained} read by the agent`,
      flagged: false,
    },
    {
      key: 'routines',
      label: 'Routines',
      value: `${r.scheduled} scheduled · ${r.running} running · ${plural(r.job_sessions_created, 'job')} run`,
      flagged: false,
    },
    { key: 'processes', label: 'Processes', value: `${h.processes_running} running`, flagged: false },
    { key: 'locks', label: 'Session locks', value: locks.join(' · '), flagged: lockTrouble },
    ...channelRows(h.channels),
  ];
  return { headline, state, rows };
}

/** Wake requests since start by reason, busiest first, and what became of the ones retried or skipped. */
function wakesText(hb: HealthView['heartbeat']): string {
  const reasons = Object.entries(hb.wakes_by_reason)
    .filter(([, c]) => c > 0)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([reason, c]) => `${REASON_LABEL[reason as WakeReason] ?? reason} ${n(c)}`);
  const total = Object.values(hb.wakes_by_reason).reduce((a, c) => a + c, 0);
  return [
    total === 0 ? 'none yet' : `${n(total)} requested (${reasons.join(', ')})`,
    hb.requests_waiting > 0 ? `${n(hb.requests_waiting)} not served yet` : null,
    hb.retried_busy > 0 ? `${n(hb.retried_busy)} retried while busy` : null,
    hb.retried_failed > 0 ? `${n(hb.retried_failed)} retried after an error` : null,
    hb.skipped_lock > 0 ? `${n(hb.skipped_lock)} skipped, another run held the lock` : null,
  ]
    .filter((p) => p !== null)
    .join(' · ');
}

/** `850 ms`, `2.4 s`, `3 min 5 s`. */
function msText(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return durationText(ms);
}

/** How long the heartbeat's model runs took since start. */
function runsText(hb: HealthView['heartbeat']): string {
  if (hb.run_count === 0) return 'none yet';
  const average = hb.run_ms_total / hb.run_count;
  return `${plural(hb.run_count, 'run')} · last ${msText(hb.run_ms_last)} · average ${msText(average)} · longest ${msText(hb.run_ms_max)}`;
}

/** Background work's tokens today (the cached part, the cost), against the budget when one is set. */
function backgroundTokens(hb: HealthView['heartbeat']): string | null {
  const u = hb.usage_today;
  const used = u.input_tokens + u.output_tokens;
  if (used === 0 && hb.daily_token_budget <= 0) return null;
  const runs = `${hb.runs_today} background ${hb.runs_today === 1 ? 'run' : 'runs'}`;
  const cached = (u.cache_read_tokens ?? 0) > 0 ? `, ${n(u.cache_read_tokens ?? 0)} of them cached` : '';
  const cost = (u.cost_micro_usd ?? 0) > 0 ? ` · ${costText(u.cost_micro_usd ?? 0)}` : '';
  const today = `${n(used)} tokens today (${n(u.input_tokens)} in${cached}, ${n(u.output_tokens)} out${cost}; ${runs})`;
  if (hb.daily_token_budget <= 0) return today;
  return hb.budget_spent
    ? `${today}: the daily budget of ${n(hb.daily_token_budget)} is spent, background work waits until tomorrow`
    : `${today} of a daily budget of ${n(hb.daily_token_budget)}`;
}

/** A row for each phone channel that is set up (its state, counters, last error), and the answers refused. */
function channelRows(ch: HealthView['channels'] | undefined): HealthRow[] {
  if (!ch || ch.channels.length === 0) return [];
  const rows: HealthRow[] = ch.channels.map((c) => ({
    key: `channel-${c.channel}`,
    label: `Phone: ${CHANNEL_NAME[c.channel]}`,
    value: c.last_error ? `${channelLine(c)} · last error: ${c.last_error}` : channelLine(c),
    flagged: c.status === 'retrying' || c.status === 'needs_setup',
  }));
  rows.push({
    key: 'channel-answers',
    label: 'Phone answers',
    value: `${n(ch.refused_answers)} refused (a forged, replayed or expired token, a wrong pairing code) · ${n(ch.ignored_chats)} messages from other chats ignored`,
    flagged: false,
  });
  return rows;
}
