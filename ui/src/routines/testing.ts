// Builders shared by the routines tests (imported by `*.test.ts` only, never by the app).

import type { RoutineView } from '../lib/protocol';

/** A routine as `RoutinesView` lists it: enabled, pending, never run, every day at 09:00
 *  UTC; `over` changes any field. */
export function routineView(over: Partial<RoutineView> = {}): RoutineView {
  return {
    id: 'r',
    title: 'A routine',
    description: '',
    schedule: '0 9 * * *',
    timezone: 'UTC',
    execution_mode: 'isolated',
    wake_mode: 'now',
    source: 'manual',
    enabled: true,
    state: 'pending',
    last_run_at: null,
    next_run_at: null,
    timeout_seconds: 600,
    retry: 0,
    max_retry: 3,
    error_message: null,
    created_at: 0,
    kind: null,
    schedule_description: 'every day at 09:00, UTC',
    next_runs: [],
    problem: null,
    last_run: null,
    removed_at: null,
    catch_up: 'skip',
    unknown_run: null,
    suggested: false,
    ...over,
  };
}
