// The mock's routines (`?mock`, `?mock=routines` for a fuller list, `?mock=routines-corrupted`
// for the broken-file banner, `?mock=routines-held` for a HEARTBEAT.md held for Trust,
// `?mock=empty` for none): an in-memory list with the core's
// command shapes. Schedules are checked and described roughly — enough to preview the pane.

import type { Event, HeartbeatChecks, RoutineDraft, RoutineRun, RoutinesView, RoutineView, SchedulePreview } from './protocol';

type Emit = (sessionId: string | null, runId: string | null, event: Event) => void;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

function invalid(field: string, message: string) {
  return { code: 'invalid_routine', message, field };
}

/** "every 30 minutes" / "every weekday at 09:00, Europe/Berlin", and the step between runs. */
function describe(schedule: string, zone: string): { text: string; step: number } {
  const every = schedule.match(/^(\d+)\s*([mhd])$/);
  if (every) {
    const n = Number(every[1]);
    const unit = { m: ['minute', MINUTE], h: ['hour', HOUR], d: ['day', 24 * HOUR] }[every[2]] as [string, number];
    return { text: n === 1 ? `every ${unit[0]}` : `every ${n} ${unit[0]}s`, step: n * unit[1] };
  }
  const f = schedule.split(/\s+/);
  const ok = f.length === 5 && /^\d{1,2}$/.test(f[0]) && Number(f[0]) < 60 && /^(\d{1,2}|\*)$/.test(f[1]) && (f[1] === '*' || Number(f[1]) < 24);
  if (!ok) {
    throw invalid('schedule', `"${schedule}" is not a valid cron expression; the form is minute hour day-of-month month day-of-week, like "30 8 * * *"`);
  }
  const at = f[1] === '*' ? `every hour at :${f[0].padStart(2, '0')}` : `at ${f[1].padStart(2, '0')}:${f[0].padStart(2, '0')}`;
  const days = f[4] === '1-5' ? 'every weekday' : f[4] === '*' ? 'every day' : `on days ${f[4]}`;
  return { text: f[1] === '*' ? `${at}, ${zone}` : `${days} ${at}, ${zone}`, step: f[1] === '*' ? HOUR : 24 * HOUR };
}

export function createMockRoutines(variant: string, emit: Emit) {
  const now = Date.now();
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  const routines: RoutineView[] = [];
  const runs: Record<string, RoutineRun[]> = {};

  function preview(schedule: string | null, timezone: string | null, nextRunAt: number | null): SchedulePreview {
    const tz = timezone?.trim() || zone;
    if (!/^(UTC|[A-Z][A-Za-z_]+\/[A-Za-z_]+)$/.test(tz)) {
      throw invalid('timezone', `"${tz}" is not an IANA time zone; use a name like Europe/Berlin, America/New_York or UTC`);
    }
    if (!schedule) {
      if (nextRunAt === null) throw invalid('schedule', 'give a schedule (a cron expression like "0 9 * * 1-5" or an interval like "30m")');
      return { description: `once, at ${new Date(nextRunAt).toISOString().slice(0, 16).replace('T', ' ')}, ${tz}`, timezone: tz, next_runs: [nextRunAt] };
    }
    const { text, step } = describe(schedule, tz);
    const first = Math.ceil(Date.now() / step) * step;
    return { description: text, timezone: tz, next_runs: [first, first + step, first + 2 * step] };
  }

  function make(id: string, d: RoutineDraft, extra: Partial<RoutineView> = {}): RoutineView {
    const p = preview(d.schedule ?? null, d.timezone ?? null, d.next_run_at ?? null);
    return {
      id,
      title: d.title ?? id,
      description: d.description ?? '',
      schedule: d.schedule ?? null,
      timezone: p.timezone,
      execution_mode: d.execution_mode ?? 'inline',
      wake_mode: d.wake_mode ?? 'now',
      source: 'manual',
      enabled: d.enabled ?? true,
      state: 'pending',
      last_run_at: null,
      next_run_at: p.next_runs[0] ?? null,
      timeout_seconds: d.timeout_seconds ?? 300,
      retry: 0,
      max_retry: 3,
      error_message: null,
      created_at: now,
      kind: d.kind ?? null,
      schedule_description: p.description,
      next_runs: p.next_runs,
      problem: null,
      last_run: null,
      removed_at: null,
      catch_up: d.catch_up ?? 'once',
      unknown_run: null,
      suggested: false,
      ...extra,
    };
  }

  if (variant !== 'empty') {
    routines.push(make('drink_water', { title: 'Drink water', description: 'Remind me to drink a glass of water.', schedule: '1h', kind: 'time_reminder' }, { source: 'chat', last_run_at: now - 40 * MINUTE }));
    runs.drink_water = [
      { run_id: 'r1', routine_id: 'drink_water', mode: 'inline', due_at: now - 100 * MINUTE, started_at: now - 100 * MINUTE, finished_at: now - 100 * MINUTE, outcome: 'ok', session_id: null, summary: 'Time to drink a glass of water.', error: null, deterministic: true, due_count: 1 },
      { run_id: 'r2', routine_id: 'drink_water', mode: 'inline', due_at: now - 40 * MINUTE, started_at: now - 40 * MINUTE, finished_at: now - 40 * MINUTE, outcome: 'ok', session_id: null, summary: 'Time to drink a glass of water.', error: null, deterministic: true, due_count: 1 },
    ];
    routines.push(make('morning_notes', { title: 'Summarise my unread notes', description: 'Read ~/notes/inbox and summarise what is new.', schedule: '0 9 * * 1-5', timezone: 'Europe/Berlin', execution_mode: 'isolated', timeout_seconds: 900, catch_up: 'all' }, { last_run_at: now - 20 * HOUR }));
    runs.morning_notes = [
      { run_id: 'r0', routine_id: 'morning_notes', mode: 'isolated', due_at: now - 92 * HOUR, started_at: now - 44 * HOUR, finished_at: now - 44 * HOUR + 80_000, outcome: 'ok', session_id: 'job_morning_notes_r0', summary: 'Three days of notes: nothing urgent.', error: null, deterministic: false, due_count: 3, last_due_at: now - 44 * HOUR },
      { run_id: 'r3', routine_id: 'morning_notes', mode: 'isolated', due_at: now - 20 * HOUR, started_at: now - 20 * HOUR, finished_at: now - 20 * HOUR + 95_000, outcome: 'ok', session_id: 'job_morning_notes_r3', summary: 'Three new notes: the trip budget, a draft of the talk, and a reading list.', error: null, deterministic: false, due_count: 1, usage: { input_tokens: 3_180, output_tokens: 72, cache_read_tokens: 2_900, cost_micro_usd: 420 } },
    ];
    if (variant.startsWith('routines')) {
      routines.push(make('backup_check', { title: 'Check the nightly backup', description: 'Look at ~/backup.log and tell me if the last run failed.', schedule: '30 7 * * *', execution_mode: 'isolated' }, { enabled: false, state: 'failed', error_message: 'timed out after 300 s' }));
      routines.push(make('deploy_site', { title: 'Deploy the site', description: 'Run make deploy in ~/site.', schedule: '0 18 * * *', execution_mode: 'isolated', catch_up: 'skip' }, { last_run_at: now - 3 * HOUR, unknown_run: 'r6', error_message: 'outcome unknown, not retried: interrupted: Vigil stopped while it ran' }));
      runs.deploy_site = [
        { run_id: 'r5', routine_id: 'deploy_site', mode: 'isolated', due_at: now - 75 * HOUR, started_at: now - 27 * HOUR, finished_at: now - 27 * HOUR, outcome: 'missed', session_id: null, summary: null, error: 'due 2 times while Vigil could not run it; not run (catch-up: skip)', deterministic: false, due_count: 2, last_due_at: now - 51 * HOUR },
        { run_id: 'r6', routine_id: 'deploy_site', mode: 'isolated', due_at: now - 3 * HOUR, started_at: now - 3 * HOUR, finished_at: now - 3 * HOUR + 40_000, outcome: 'unknown', session_id: 'job_deploy_site_r6', summary: null, error: 'interrupted: Vigil stopped while it ran', deterministic: false, due_count: 1, side_effect: 'exec: make deploy' },
      ];
      runs.backup_check = [
        { run_id: 'r4', routine_id: 'backup_check', mode: 'isolated', due_at: now - 26 * HOUR, started_at: now - 26 * HOUR, finished_at: now - 26 * HOUR + 300_000, outcome: 'timed_out', session_id: null, summary: null, error: 'timed out after 300 s', deterministic: false, due_count: 1 },
      ];
    }
  }
  let corrupted = variant === 'routines-corrupted';
  let held = variant === 'routines-held';
  let checks = variant === 'empty' ? '# Heartbeat checks\n\n<!-- Add checks for every heartbeat here. -->\n' : '# Heartbeat checks\n\n- If ~/Downloads holds more than 5 GB, tell me.\n- Watch the build log for new errors.\n';
  const checksView = (): HeartbeatChecks => ({
    text: checks,
    exists: true,
    // Roughly the core's rule: nothing but headings, empty items and comments.
    effectively_empty: checks
      .replace(/<!--[\s\S]*?(-->|$)/g, '')
      .split('\n')
      .every((l) => /^\s*(#.*|[-*+]\s*(\[[ xX]?\])?\s*)?$/.test(l)),
    path: '/home/you/.local/share/dev.vigil.desktop/workspace/HEARTBEAT.md',
  });

  const view = (): RoutinesView =>
    corrupted
      ? {
          status: 'corrupted',
          error: 'invalid JSON at line 14, column 3: expected `,` or `]`',
          routines: routines.map((r) => ({ ...r, last_run: runs[r.id]?.at(-1) ?? null })),
        }
      : {
          status: routines.length ? 'ok' : 'empty',
          error: null,
          routines: routines.map((r) => ({ ...r, last_run: runs[r.id]?.at(-1) ?? null })),
          ...(held
            ? { held: 'HEARTBEAT.md was replaced while a sandboxed command was running; its routines wait for you: review the file, then Trust it.' }
            : {}),
        };

  function changed(): void {
    emit(null, null, { type: 'routines_changed', routines: view() });
  }

  function find(id: string): number {
    const i = routines.findIndex((r) => r.id === id);
    if (i < 0) throw { code: 'invalid_routine', message: `there is no routine "${id}"` };
    return i;
  }

  return {
    list: view,
    history: (id: string) => runs[id] ?? [],
    preview,
    add(d: RoutineDraft) {
      if (!d.title?.trim()) throw invalid('title', 'a routine needs a title');
      const id = d.title.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '') || 'routine';
      const r = make(routines.some((x) => x.id === id) ? `${id}_2` : id, d);
      routines.push(r);
      changed();
      return { routine: r, warnings: [] };
    },
    update(id: string, d: RoutineDraft) {
      const i = find(id);
      const old = routines[i];
      const kept: RoutineDraft = {
        title: old.title,
        description: old.description,
        schedule: old.schedule ?? undefined,
        next_run_at: old.next_run_at ?? undefined,
        timezone: old.timezone,
        execution_mode: old.execution_mode,
        wake_mode: old.wake_mode,
        timeout_seconds: old.timeout_seconds,
        enabled: old.enabled,
        kind: old.kind ?? undefined,
      };
      routines[i] = make(id, { ...kept, ...d }, { created_at: old.created_at, source: old.source });
      changed();
      return routines[i];
    },
    remove(id: string, hard: boolean) {
      const i = find(id);
      if (hard) routines.splice(i, 1);
      else routines[i] = { ...routines[i], removed_at: routines[i].removed_at ?? Date.now(), next_runs: [] };
      changed();
    },
    restoreRemoved(id: string) {
      const i = find(id);
      routines[i] = { ...routines[i], removed_at: null };
      changed();
      return routines[i];
    },
    approve(id: string) {
      const i = find(id);
      const w = routines[i].watch;
      if (w) routines[i] = { ...routines[i], watch: { ...w, approved: true, paused: null } };
      changed();
      return view();
    },
    setEnabled(id: string, enabled: boolean) {
      const i = find(id);
      routines[i] = { ...routines[i], enabled, state: enabled && routines[i].state === 'failed' ? 'pending' : routines[i].state };
      changed();
      return routines[i];
    },
    /** The user's answer to a run whose outcome is unknown: run it again now, or leave it. */
    resolve(id: string, runId: string, retry: boolean) {
      const i = find(id);
      if (routines[i].unknown_run !== runId) throw { code: 'invalid_routine', message: `run ${runId} of routine "${id}" is not waiting for a decision` };
      routines[i] = { ...routines[i], unknown_run: null, error_message: null };
      if (retry) this.runNow(id);
      else changed();
    },
    runNow(id: string) {
      const r = routines[find(id)];
      const t = Date.now();
      (runs[id] ??= []).push({ run_id: `r${t}`, routine_id: id, mode: r.execution_mode, due_at: t, started_at: t, finished_at: t + 1000, outcome: 'ok', session_id: null, summary: `${r.title}: done (mock).`, error: null, deterministic: r.kind !== null, due_count: 1 });
      routines[find(id)] = { ...r, last_run_at: t };
      changed();
    },
    checks: checksView,
    saveChecks(expected: string, text: string) {
      if (expected.trimEnd() !== checks.trimEnd()) {
        throw { code: 'invalid_checks', message: 'HEARTBEAT.md changed since it was opened here; reload to see the new text, then edit again' };
      }
      checks = text;
      return checksView();
    },
    restore() {
      corrupted = false;
      changed();
      return routines.length;
    },
    trust() {
      held = false;
      changed();
      return view();
    },
  };
}
