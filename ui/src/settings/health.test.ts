import { describe, expect, it } from 'vitest';
import type { HealthView } from '../lib/protocol';
import { healthSummary } from './health';

/** The heartbeat's wake counters and run times, which these rows do not show. */
const wakes = {
  requests_waiting: 0,
  wakes_by_reason: {},
  retried_busy: 0,
  retried_failed: 0,
  skipped_lock: 0,
  run_count: 0,
  run_ms_total: 0,
  run_ms_max: 0,
  run_ms_last: 0,
  usage_today: { input_tokens: 0, output_tokens: 0 },
  runs_today: 0,
  daily_token_budget: 0,
  budget_spent: false,
  idle_factor: 1,
};

function health(patch: Partial<HealthView> = {}): HealthView {
  return {
    status: 'healthy',
    started_at: 0,
    uptime_ms: (2 * 60 + 5) * 60_000,
    paused: false,
    lanes: [],
    locks: { held: 0, acquired: 40, waited: 0, wait_ms_total: 0, wait_ms_max: 0, timeouts: 0, reclaimed: 0 },
    heartbeat: { ...wakes, handler_registered: true, running: false, pending_wakes: 0, delivered: 2, suppressed: 9, skipped_busy: 0 },
    mailbox: { waiting: 1, deposited: 3, drained: 2 },
    routines: { scheduled: 4, running: 0, job_sessions_created: 1 },
    processes_running: 0,
    channels: { channels: [], refused_answers: 0, ignored_chats: 0 },
    alerts: [],
    ...patch,
  };
}

const value = (h: HealthView, key: string) => healthSummary(h).rows.find((r) => r.key === key)!;

describe('the health section', () => {
  it('says healthy with the uptime, and what is paused or stopping', () => {
    expect(healthSummary(health())).toMatchObject({ state: 'ok', headline: 'Healthy · up 2 h 5 min' });
    expect(healthSummary(health({ paused: true })).headline).toBe(
      'Healthy, background activity paused · up 2 h 5 min',
    );
    expect(healthSummary(health({ paused: true, alerts: ['11 heartbeat wakes are waiting'] }))).toMatchObject({
      state: 'attention',
      headline: 'Needs a look · up 2 h 5 min',
    });
    expect(healthSummary(health({ status: 'shutting_down', paused: true }))).toMatchObject({
      state: 'stopping',
      headline: 'Shutting down',
    });
  });

  it('names what is running and the messages queued behind it', () => {
    expect(value(health(), 'running').value).toBe('Nothing');
    const lanes: HealthView['lanes'] = [
      { session_id: 'heartbeat_session_main', scope: 'heartbeat', queued: 0 },
      { session_id: 'job_backup_1a2b', scope: 'job', queued: 0 },
      { session_id: 'main', scope: 'primary', queued: 2 },
    ];
    expect(value(health({ lanes }), 'running').value).toBe(
      'the heartbeat; a routine job (job_backup_1a2b); the main conversation, 2 messages queued',
    );
  });

  it('counts deliveries, drains and jobs in plain words', () => {
    const h = health();
    expect(value(h, 'heartbeat').value).toBe('2 delivered · 9 nothing to report');
    expect(value(h, 'mailbox').value).toBe('1 waiting to be read · 3 arrived · 2 read by the agent');
    expect(value(h, 'routines').value).toBe('4 scheduled · 0 running · 1 job run');
    const busy = health({
      heartbeat: { ...wakes, handler_registered: true, running: true, pending_wakes: 1, delivered: 0, suppressed: 0, skipped_busy: 3 },
    });
    expect(value(busy, 'heartbeat').value).toBe(
      'running now · 0 delivered · 0 nothing to report · 3 put off while a turn ran · 1 wake waiting',
    );
    const spent = health({
      heartbeat: {
        ...wakes,
        handler_registered: true,
        running: false,
        pending_wakes: 0,
        delivered: 0,
        suppressed: 4,
        skipped_busy: 0,
        usage_today: { input_tokens: 48_000, output_tokens: 2_100, cache_read_tokens: 30_000, cost_micro_usd: 12_300 },
        runs_today: 4,
        daily_token_budget: 50_000,
        budget_spent: true,
        idle_factor: 4,
      },
    });
    expect(value(spent, 'heartbeat').value).toBe(
      '0 delivered · 4 nothing to report · 50,100 tokens today (48,000 in, 30,000 of them cached, 2,100 out · $0.01; 4 background runs): ' +
        'the daily budget of 50,000 is spent, background work waits until tomorrow · interval ×4 while you are away',
    );
  });

  it('counts wakes by reason and how long the heartbeat runs took', () => {
    expect(value(health(), 'wakes').value).toBe('none yet');
    expect(value(health(), 'runs').value).toBe('none yet');
    const busy = health({
      heartbeat: {
        ...wakes,
        handler_registered: true,
        running: false,
        pending_wakes: 0,
        delivered: 1,
        suppressed: 6,
        skipped_busy: 2,
        wakes_by_reason: { interval: 8, cron: 3, manual: 1, 'exec-event': 0 },
        requests_waiting: 2,
        retried_busy: 2,
        retried_failed: 1,
        skipped_lock: 1,
        run_count: 7,
        run_ms_total: 13_300,
        run_ms_max: 2_400,
        run_ms_last: 850,
      },
    });
    expect(value(busy, 'wakes').value).toBe(
      '12 requested (interval 8, routine 3, manual 1) · 2 not served yet · 2 retried while busy · ' +
        '1 retried after an error · 1 skipped, another run held the lock',
    );
    expect(value(busy, 'runs').value).toBe('7 runs · last 850 ms · average 1.9 s · longest 2.4 s');
  });

  it('flags locks only when one gave up waiting or was taken back', () => {
    const calm = value(health(), 'locks');
    expect(calm).toMatchObject({ value: '0 held · 40 taken · none waited', flagged: false });
    const waited = health({
      locks: { held: 1, acquired: 41, waited: 2, wait_ms_total: 130, wait_ms_max: 120, timeouts: 0, reclaimed: 0 },
    });
    expect(value(waited, 'locks')).toMatchObject({
      value: '1 held · 41 taken · 2 waited (longest 120 ms, 130 ms in all)',
      flagged: false,
    });
    const stuck = health({
      locks: { held: 0, acquired: 41, waited: 2, wait_ms_total: 20_130, wait_ms_max: 10_000, timeouts: 1, reclaimed: 1 },
    });
    expect(value(stuck, 'locks').flagged).toBe(true);
    expect(value(stuck, 'locks').value).toContain('1 gave up waiting · 1 taken back from a stuck holder');
  });
  it('shows a row per phone channel set up, flagged with its error while it retries', () => {
    expect(healthSummary(health()).rows.some((r) => r.key.startsWith('channel'))).toBe(false);
    const telegram = {
      channel: 'telegram' as const,
      status: 'retrying' as const,
      has_token: true,
      queued: 3,
      sent: 4,
      last_error: 'Telegram answered sendMessage with 502 Bad Gateway: Bad Gateway',
      answers: true,
      sends: '',
    };
    const h = health({ channels: { channels: [telegram], refused_answers: 2, ignored_chats: 1 } });
    expect(value(h, 'channel-telegram')).toMatchObject({
      label: 'Phone: Telegram',
      value:
        'Retrying · 4 sent · 3 waiting · answers approvals · last error: Telegram answered sendMessage with 502 Bad Gateway: Bad Gateway',
      flagged: true,
    });
    expect(value(h, 'channel-answers').value).toMatch(/^2 refused .* 1 messages from other chats ignored$/);
    const back = health({ channels: { channels: [{ ...telegram, status: 'connected', queued: 0 }], refused_answers: 0, ignored_chats: 0 } });
    expect(value(back, 'channel-telegram').flagged).toBe(false);
  });
});
