import { describe, expect, it } from 'vitest';
import type { RoutineRun, RoutineView } from '../lib/protocol';
import {
  awaitsDecision,
  CATCH_UP_CHOICES,
  catchUpLabel,
  checkForm,
  corruptedBanner,
  draftFromForm,
  formatRun,
  formFromRoutine,
  lastRunLabel,
  madeBy,
  newForm,
  placeError,
  runTokens,
  runWhen,
  splitRemoved,
  stateLabel,
  zoneChoices,
} from './form';
import { routineView } from './testing';

const routine = (over: Partial<RoutineView> = {}): RoutineView =>
  routineView({
    id: 'water',
    title: 'Drink water',
    description: 'Remind me.',
    schedule: '0 9 * * 1-5',
    timezone: 'Europe/Berlin',
    execution_mode: 'inline',
    next_run_at: 1_770_000_000_000,
    timeout_seconds: 120,
    schedule_description: 'every weekday at 09:00, Europe/Berlin',
    catch_up: 'once',
    ...over,
  });

describe('the routine form', () => {
  it('round-trips a routine into a draft with trimmed values', () => {
    const form = formFromRoutine(routine());
    form.title = '  Drink more water ';
    expect(draftFromForm(form)).toEqual({
      title: 'Drink more water',
      description: 'Remind me.',
      schedule: '0 9 * * 1-5',
      timezone: 'Europe/Berlin',
      execution_mode: 'inline',
      wake_mode: 'now',
      catch_up: 'once',
      timeout_seconds: 120,
      enabled: true,
    });
  });

  it('offers the catch-up policies, once first, and sends the one chosen', () => {
    expect(CATCH_UP_CHOICES.map((c) => c.value)).toEqual(['once', 'skip', 'all']);
    expect(newForm('UTC').catch_up).toBe('once');
    const form = formFromRoutine(routine({ catch_up: 'all' }));
    expect(form.catch_up).toBe('all');
    form.catch_up = 'skip';
    expect(draftFromForm(form).catch_up).toBe('skip');
    expect(catchUpLabel(routine())).toBeNull();
    expect(catchUpLabel(routine({ catch_up: 'skip' }))).toBe('skips missed times');
    expect(catchUpLabel(routine({ catch_up: 'all' }))).toBe('catches up on every missed time');
  });

  it('keeps a routine that rides along with the next heartbeat that way', () => {
    const form = formFromRoutine(routine({ wake_mode: 'next_heartbeat' }));
    expect(form.wake_mode).toBe('next_heartbeat');
    expect(draftFromForm(form).wake_mode).toBe('next_heartbeat');
    expect(newForm('UTC').wake_mode).toBe('now');
  });

  it('keeps a one-shot routine one-shot: no schedule is sent', () => {
    const draft = draftFromForm(formFromRoutine(routine({ schedule: null })));
    expect('schedule' in draft).toBe(false);
    expect(checkForm(formFromRoutine(routine({ schedule: null })), true)).toEqual({});
  });

  it('a new form starts in the given zone and asks for a title and a schedule', () => {
    const form = newForm('America/New_York');
    expect(form.timezone).toBe('America/New_York');
    expect(Object.keys(checkForm(form, false)).sort()).toEqual(['schedule', 'title']);
  });

  it('refuses a timeout that is not a whole number of seconds in range', () => {
    const form = { ...newForm('UTC'), title: 'x', schedule: '30m' };
    for (const bad of ['', '0', '1.5', 'ten', '86401']) {
      expect(checkForm({ ...form, timeout_seconds: bad }, false).timeout_seconds).toBeDefined();
    }
    expect(checkForm({ ...form, timeout_seconds: '86400' }, false)).toEqual({});
  });

  it('places core errors at their field, next_run_at at the schedule, the rest above the form', () => {
    expect(placeError({ code: 'invalid_routine', message: 'bad cron', field: 'schedule' })).toEqual({ field: 'schedule', message: 'bad cron' });
    expect(placeError({ code: 'invalid_routine', message: 'past', field: 'next_run_at' }).field).toBe('schedule');
    expect(placeError({ code: 'invalid_routine', message: 'no kind', field: 'kind' }).field).toBeNull();
    expect(placeError({ code: 'storage', message: 'disk full' }).field).toBeNull();
  });

  it('offers the user zone first and never twice', () => {
    const zones = zoneChoices('Europe/Berlin');
    expect(zones[0]).toBe('Europe/Berlin');
    expect(zones.filter((z) => z === 'Europe/Berlin')).toHaveLength(1);
  });
});

describe('times and states', () => {
  it('shows run times in the routine zone, not the window zone', () => {
    const t = Date.UTC(2026, 1, 12, 8, 0); // Thu 12 Feb 2026, 08:00 UTC
    expect(formatRun(t, 'Europe/Berlin')).toBe('Thu 12 Feb, 09:00');
    expect(formatRun(t, 'America/New_York')).toBe('Thu 12 Feb, 03:00');
    // An unknown zone still shows a time rather than throwing.
    expect(formatRun(t, 'Mars/Base')).toMatch(/12 Feb/);
  });

  it('labels the last run from its outcome first, then from the routine', () => {
    const t = Date.UTC(2026, 1, 12, 8, 0);
    const run: RoutineRun = {
      run_id: 'r', routine_id: 'water', mode: 'inline', due_at: t, started_at: t, finished_at: t,
      outcome: 'timed_out', session_id: null, summary: null, error: 'slow', deterministic: false, due_count: 1,
    };
    expect(lastRunLabel(routine({ last_run: run, last_run_at: t }))).toBe('Timed out Thu 12 Feb, 09:00');
    expect(lastRunLabel(routine({ last_run_at: t }))).toBe('Ran Thu 12 Feb, 09:00');
    expect(lastRunLabel(routine())).toBe('Not run yet');
    expect(lastRunLabel(routine({ state: 'running', last_run: run }))).toBe('Running now');
  });

  it('a problem outranks every other state', () => {
    expect(stateLabel(routine({ problem: 'bad zone', enabled: false })).text).toBe('Cannot run');
    expect(stateLabel(routine({ enabled: false })).text).toBe('Paused');
    expect(stateLabel(routine({ state: 'done' })).text).toBe('Done');
    expect(stateLabel(routine()).text).toBe('Active');
  });

  it('in a held HEARTBEAT.md, every routine waits for Trust and none claims to be the user\'s', () => {
    expect(stateLabel(routine(), true)).toEqual({ text: 'Waiting for Trust', tone: 'warn' });
    expect(stateLabel(routine({ problem: 'bad zone' }), true).text).toBe('Cannot run');
    expect(madeBy(routine(), true)).toBe('In the replaced HEARTBEAT.md: not known who wrote it');
    expect(madeBy(routine({ source: 'chat' }), true)).not.toMatch(/by you/);
  });

  it('says who made each routine: you or Vigil', () => {
    expect(madeBy(routine())).toBe('Added by you');
    expect(madeBy(routine({ source: 'chat' }))).toBe('Added by you, in a conversation');
    expect(madeBy(routine({ source: 'heartbeat_reflect' }))).toBe('Added by Vigil on its own');
    // A suggestion from the daily reflection waits, off, for the user.
    const suggestion = routine({ source: 'heartbeat_reflect', suggested: true, enabled: false });
    expect(madeBy(suggestion)).toMatch(/^Suggested by Vigil/);
    expect(stateLabel(suggestion).text).toBe('Suggested');
  });
});

describe('the run history', () => {
  const t = Date.UTC(2026, 1, 12, 8, 0); // Thu 12 Feb 2026, 08:00 UTC
  const hour = 3_600_000;
  const run = (over: Partial<RoutineRun>): RoutineRun => ({
    run_id: 'r', routine_id: 'water', mode: 'isolated', due_at: t, started_at: t, finished_at: t + 60_000,
    outcome: 'ok', session_id: null, summary: null, error: null, deterministic: false, due_count: 1, ...over,
  });

  it('says which due times were missed, one or several in one record', () => {
    expect(runWhen(run({ outcome: 'missed', finished_at: t + 5 * hour }), 'UTC')).toBe('due Thu 12 Feb, 08:00');
    expect(runWhen(run({ outcome: 'missed', due_count: 4, last_due_at: t + 3 * hour }), 'UTC')).toBe(
      '4 due times, Thu 12 Feb, 08:00 – Thu 12 Feb, 11:00',
    );
    expect(runWhen(run({ outcome: 'skipped', due_count: 2, last_due_at: t + hour }), 'Europe/Berlin')).toBe(
      '2 due times, Thu 12 Feb, 09:00 – Thu 12 Feb, 10:00',
    );
  });

  it('a run shows when it finished, and a catch-up run the due times it stood for', () => {
    expect(runWhen(run({}), 'UTC')).toBe('Thu 12 Feb, 08:01');
    expect(runWhen(run({ deterministic: true }), 'UTC')).toBe('Thu 12 Feb, 08:01 · no model');
    expect(runWhen(run({ due_count: 3, last_due_at: t + 2 * hour, finished_at: t + 3 * hour }), 'UTC')).toBe(
      'Thu 12 Feb, 11:00 · for 3 due times, Thu 12 Feb, 08:00 – Thu 12 Feb, 10:00',
    );
  });

  it('shows what a run’s model turn used; an inline run’s is its heartbeat run’s', () => {
    const usage = { input_tokens: 3_180, output_tokens: 30, cache_read_tokens: 2_900, cost_micro_usd: 400 };
    expect(runTokens(run({ usage }))).toBe('3,210 tokens (2,900 cached) · $0.0004');
    expect(runTokens(run({ mode: 'inline', usage: { input_tokens: 1_500, output_tokens: 9 } }))).toBe(
      'heartbeat run: 1,509 tokens',
    );
    expect(runTokens(run({ deterministic: true })), 'no model ran').toBeNull();
  });

  it('offers Retry and Dismiss only on the unknown run that waits for the user', () => {
    const cut = run({ run_id: 'r6', outcome: 'unknown', side_effect: 'exec: make deploy' });
    expect(awaitsDecision(routine({ unknown_run: 'r6' }), cut)).toBe(true);
    expect(awaitsDecision(routine({ unknown_run: null }), cut), 'answered already').toBe(false);
    expect(awaitsDecision(routine({ unknown_run: 'r7' }), cut), 'an older one').toBe(false);
    expect(awaitsDecision(routine({ unknown_run: 'r6' }), run({ run_id: 'r6', outcome: 'failed' }))).toBe(false);
    expect(lastRunLabel(routine({ last_run: cut }))).toBe('Outcome unknown Thu 12 Feb, 09:01');
  });
});

describe('removed routines', () => {
  it('are listed apart, the most recently removed first, and the rest keep their order', () => {
    const list = [
      routine({ id: 'a' }),
      routine({ id: 'old', removed_at: 1_000 }),
      routine({ id: 'b' }),
      routine({ id: 'new', removed_at: 5_000 }),
    ];
    const { inUse, removed } = splitRemoved(list);
    expect(inUse.map((r) => r.id)).toEqual(['a', 'b']);
    expect(removed.map((r) => r.id)).toEqual(['new', 'old']);
    expect(splitRemoved([])).toEqual({ inUse: [], removed: [] });
  });

  it('says that the last good routines keep running while the task block is broken', () => {
    const kept = corruptedBanner({ error: 'invalid JSON at line 7, column 13', routines: [routine({})] });
    expect(kept.detail).toBe('invalid JSON at line 7, column 13. The routines below are the last good version: they keep running as before.');
    expect(kept.repair).toMatch(/^Any change here, or asking Vigil for one, writes them back as a valid block/);
    const none = corruptedBanner({ error: 'invalid JSON at line 7, column 13', routines: [] });
    expect(none.detail).toBe('invalid JSON at line 7, column 13.');
    expect(none.repair).toMatch(/^Fix the file by hand/);
  });
});
