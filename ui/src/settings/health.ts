// The Settings pane's Health section, pure: a `HealthView` as a headline and rows of plain
// words. A row is flagged when it says something the user may want to act on (a lock that
// timed out or was taken back from a dead holder).
import { durationText } from '../heartbeat/status';
import type { HealthView, LaneHealth } from '../lib/protocol';

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
  ];
  return { headline, state, rows };
}

/** Background work's tokens today, against the budget when one is set. */
function backgroundTokens(hb: HealthView['heartbeat']): string | null {
  const used = hb.usage_today.input_tokens + hb.usage_today.output_tokens;
  if (used === 0 && hb.daily_token_budget <= 0) return null;
  const n = (x: number) => x.toLocaleString('en-US');
  const runs = `${hb.runs_today} background ${hb.runs_today === 1 ? 'run' : 'runs'}`;
  const today = `${n(used)} tokens today (${n(hb.usage_today.input_tokens)} in, ${n(hb.usage_today.output_tokens)} out; ${runs})`;
  if (hb.daily_token_budget <= 0) return today;
  return hb.budget_spent
    ? `${today}: the daily budget of ${n(hb.daily_token_budget)} is spent, background work waits until tomorrow`
    : `${today} of a daily budget of ${n(hb.daily_token_budget)}`;
}
