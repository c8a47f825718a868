// The `?mock` backend's health check, from what the mock keeps: busy lanes, the heartbeat's
// counters, the routines and processes; locks are not simulated. Only `mock.ts` imports this.
//
// Owns: the shape of the mock's `HealthView`.
// Must never: invent activity the mock did not simulate (locks stay zero).

import type { createMockHeartbeat } from './mock-heartbeat';
import type { createMockProcesses } from './mock-processes';
import type { createMockRoutines } from './mock-routines';
import type { Lane } from './mock-turns';
import type { HealthView } from './protocol';

export interface HealthSources {
  startedAt: number;
  lanes: Map<string, Lane>;
  heartbeat: ReturnType<typeof createMockHeartbeat>;
  routines: ReturnType<typeof createMockRoutines>;
  processes: ReturnType<typeof createMockProcesses>;
}

export function mockHealth({ startedAt, lanes, heartbeat, routines, processes }: HealthSources): HealthView {
  const stats = heartbeat.view().stats;
  const routineList = routines.list().routines;
  return {
    status: 'healthy',
    started_at: startedAt,
    uptime_ms: Date.now() - startedAt,
    paused: false,
    lanes: [...lanes.entries()]
      .filter(([, lane]) => lane.busy)
      .map(([id, lane]) => ({ session_id: id, scope: 'primary', queued: lane.queue.length })),
    locks: { held: 0, acquired: 0, waited: 0, wait_ms_total: 0, wait_ms_max: 0, timeouts: 0, reclaimed: 0 },
    heartbeat: {
      handler_registered: true,
      running: false,
      pending_wakes: 0,
      requests_waiting: 0,
      wakes_by_reason: { interval: stats.wakes_requested },
      retried_busy: stats.skipped['requests-in-flight'] ?? 0,
      retried_failed: 0,
      skipped_lock: 0,
      run_count: stats.runs,
      run_ms_total: stats.runs * 1800,
      run_ms_max: stats.runs > 0 ? 2400 : 0,
      run_ms_last: stats.runs > 0 ? 1800 : 0,
      delivered: stats.sent,
      suppressed: stats.suppressed,
      skipped_busy: stats.skipped['requests-in-flight'] ?? 0,
      usage_today: { input_tokens: 0, output_tokens: 0 },
      runs_today: 0,
      daily_token_budget: 0,
      budget_spent: false,
      idle_factor: 1,
    },
    mailbox: {
      waiting: heartbeat.snapshot().length,
      deposited: stats.sent,
      drained: Math.max(0, stats.sent - heartbeat.snapshot().length),
    },
    routines: {
      scheduled: routineList.filter((r) => r.enabled && r.next_run_at !== null).length,
      running: routineList.filter((r) => r.state === 'running').length,
      job_sessions_created: 0,
    },
    processes_running: processes.list().filter((p) => p.state === 'running').length,
    channels: { channels: [], refused_answers: 0, ignored_chats: 0 },
    alerts: [],
  };
}
