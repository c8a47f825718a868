// The routine editor's logic, free of Svelte so it can be unit-tested: the form a routine
// (or a new one) is edited as, the draft sent to the core, client-side checks that need no
// round trip, errors from the core placed at their field, and times shown in the
// routine's own zone.

import type { CatchUp, CommandError, RoutineDraft, RoutineRun, RoutineView } from '../lib/protocol';
import { tokensText } from '../lib/usage';

export interface RoutineForm {
  title: string;
  description: string;
  /** A cron expression or an interval; empty for a one-shot (kept as it is). */
  schedule: string;
  timezone: string;
  execution_mode: 'inline' | 'isolated';
  /** For inline routines: wake the heartbeat when due, or ride along with the next one. */
  wake_mode: 'now' | 'next_heartbeat';
  /** What happens to due times missed while the computer slept or Vigil was not running. */
  catch_up: CatchUp;
  /** Text, so a half-typed number is not rejected while typing. */
  timeout_seconds: string;
  enabled: boolean;
}

/** Fields an error can be shown at. */
export type FieldName = 'title' | 'description' | 'schedule' | 'timezone' | 'timeout_seconds';
export type FieldErrors = Partial<Record<FieldName, string>>;

/** The longest run the core accepts (`MAX_TIMEOUT_SECONDS`: a day). */
export const MAX_TIMEOUT_SECONDS = 24 * 3600;
const DEFAULT_TIMEOUT_SECONDS = 300;

/** Offered in the zone input's list; any IANA name may be typed. */
export const COMMON_ZONES = [
  'UTC',
  'Europe/London',
  'Europe/Berlin',
  'Europe/Paris',
  'Europe/Madrid',
  'Europe/Rome',
  'Europe/Amsterdam',
  'Europe/Stockholm',
  'Europe/Warsaw',
  'Europe/Kyiv',
  'Europe/Istanbul',
  'Europe/Moscow',
  'Africa/Cairo',
  'Africa/Johannesburg',
  'Africa/Lagos',
  'Asia/Dubai',
  'Asia/Kolkata',
  'Asia/Bangkok',
  'Asia/Singapore',
  'Asia/Shanghai',
  'Asia/Tokyo',
  'Asia/Seoul',
  'Australia/Sydney',
  'Pacific/Auckland',
  'America/Sao_Paulo',
  'America/New_York',
  'America/Chicago',
  'America/Denver',
  'America/Los_Angeles',
  'America/Mexico_City',
  'America/Toronto',
];

/** The zone the window runs in (the user's), or UTC when it cannot be told. */
export function userZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/** The user's zone first, then the common ones. */
export function zoneChoices(user: string): string[] {
  return [user, ...COMMON_ZONES.filter((z) => z !== user)];
}

export function newForm(zone: string): RoutineForm {
  return {
    title: '',
    description: '',
    schedule: '',
    timezone: zone,
    execution_mode: 'inline',
    wake_mode: 'now',
    catch_up: 'once',
    timeout_seconds: String(DEFAULT_TIMEOUT_SECONDS),
    enabled: true,
  };
}

export function formFromRoutine(r: RoutineView): RoutineForm {
  return {
    title: r.title,
    description: r.description,
    schedule: r.schedule ?? '',
    timezone: r.timezone,
    execution_mode: r.execution_mode,
    wake_mode: r.wake_mode,
    catch_up: r.catch_up,
    timeout_seconds: String(r.timeout_seconds),
    enabled: r.enabled,
  };
}

/** Checks that need no round trip; the core checks everything again when saving. */
export function checkForm(form: RoutineForm, oneShot: boolean): FieldErrors {
  const errors: FieldErrors = {};
  if (form.title.trim() === '') errors.title = 'Give the routine a title.';
  if (!oneShot && form.schedule.trim() === '') {
    errors.schedule = 'Give a cron expression like "0 9 * * 1-5" or an interval like "30m".';
  }
  if (form.timezone.trim() === '') errors.timezone = 'Give a time zone, like Europe/Berlin.';
  const t = form.timeout_seconds.trim();
  if (!/^\d+$/.test(t) || Number(t) < 1 || Number(t) > MAX_TIMEOUT_SECONDS) {
    errors.timeout_seconds = `A whole number of seconds from 1 to ${MAX_TIMEOUT_SECONDS}.`;
  }
  return errors;
}

/**
 * What to send. A one-shot (no schedule, editing an existing routine) keeps its time: the
 * schedule is only sent when there is one.
 */
export function draftFromForm(form: RoutineForm): RoutineDraft {
  const draft: RoutineDraft = {
    title: form.title.trim(),
    description: form.description.trim(),
    timezone: form.timezone.trim(),
    execution_mode: form.execution_mode,
    wake_mode: form.wake_mode,
    catch_up: form.catch_up,
    timeout_seconds: Number(form.timeout_seconds.trim()),
    enabled: form.enabled,
  };
  if (form.schedule.trim() !== '') draft.schedule = form.schedule.trim();
  return draft;
}

/** The catch-up policies as the editor offers them, the default first. */
export const CATCH_UP_CHOICES: readonly { value: CatchUp; label: string; hint: string }[] = [
  { value: 'once', label: 'Run it once', hint: 'if it is at most a day late; the other missed times are listed as missed' },
  { value: 'skip', label: 'Skip it', hint: 'wait for the next time (for things that only make sense on time)' },
  { value: 'all', label: 'Catch up on all of them', hint: 'one run, told how many times it missed (a digest that should cover every day)' },
];

/** Where a refusal from the core goes: at its field, or above the form. */
export function placeError(e: CommandError): { field: FieldName | null; message: string } {
  const known: FieldName[] = ['title', 'description', 'schedule', 'timezone', 'timeout_seconds'];
  const field = known.find((f) => f === e.field) ?? (e.field === 'next_run_at' ? 'schedule' : null);
  return { field, message: e.message };
}

/** "Mon 24 Nov, 09:00" in `zone` (the routine's, not the window's). */
export function formatRun(ms: number, zone: string): string {
  return runFormat(zone).format(ms);
}

const RUN_OPTIONS: Intl.DateTimeFormatOptions = {
  weekday: 'short',
  day: 'numeric',
  month: 'short',
  hour: '2-digit',
  minute: '2-digit',
  hourCycle: 'h23',
};
/** One formatter per zone: making one per call cost ~0.6 ms each in WebKit, seconds for a
 *  list of 1 000 routines. An unknown zone falls back to the local one. */
const RUN_FORMATS = new Map<string, Intl.DateTimeFormat>();

function runFormat(zone: string): Intl.DateTimeFormat {
  let f = RUN_FORMATS.get(zone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-GB', { ...RUN_OPTIONS, timeZone: zone });
    } catch {
      f = new Intl.DateTimeFormat('en-GB', RUN_OPTIONS);
    }
    RUN_FORMATS.set(zone, f);
  }
  return f;
}

/** The row's summary of how the last run went. */
export function lastRunLabel(r: RoutineView): string {
  if (r.state === 'running') return 'Running now';
  if (r.last_run) return `${OUTCOME_WORDS[r.last_run.outcome]} ${formatRun(r.last_run.finished_at, r.timezone)}`;
  if (r.last_run_at !== null) return `Ran ${formatRun(r.last_run_at, r.timezone)}`;
  return 'Not run yet';
}

export const OUTCOME_WORDS: Record<RoutineRun['outcome'], string> = {
  ok: 'Done',
  acknowledged: 'Nothing to report',
  failed: 'Failed',
  timed_out: 'Timed out',
  interrupted: 'Interrupted',
  skipped: 'Skipped',
  missed: 'Missed',
  unknown: 'Outcome unknown',
};

/**
 * The time part of a history line, in the routine's zone: when a run finished (and the
 * due times a catch-up run stood for), or for due times that did not run, which ones.
 */
export function runWhen(run: RoutineRun, zone: string): string {
  const first = run.due_at ?? run.finished_at;
  const last = run.last_due_at ?? first;
  const span = `${formatRun(first, zone)} – ${formatRun(last, zone)}`;
  if (run.outcome === 'missed' || run.outcome === 'skipped') {
    return run.due_count > 1 ? `${run.due_count} due times, ${span}` : `due ${formatRun(first, zone)}`;
  }
  let when = formatRun(run.finished_at, zone);
  if (run.due_count > 1) when += ` · for ${run.due_count} due times, ${span}`;
  if (run.deterministic) when += ' · no model';
  return when;
}

/**
 * What a run's model turn used: `3,250 tokens (2,900 cached) · $0.0004`. An inline run rode
 * in a heartbeat run and shares its tokens with whatever else that run did; null when no
 * model ran.
 */
export function runTokens(run: RoutineRun): string | null {
  if (!run.usage) return null;
  const used = tokensText(run.usage);
  return run.mode === 'inline' ? `heartbeat run: ${used}` : used;
}

/** Whether `run` is the routine's cut-off run that waits for the user's Retry or Dismiss. */
export function awaitsDecision(r: RoutineView, run: RoutineRun): boolean {
  return run.outcome === 'unknown' && r.unknown_run === run.run_id;
}

/** The catch-up policy in a few words for the row; nothing for the default. */
export function catchUpLabel(r: RoutineView): string | null {
  if (r.catch_up === 'skip') return 'skips missed times';
  if (r.catch_up === 'all') return 'catches up on every missed time';
  return null;
}

/** The routine's state in a word, for the row's tag. */
export function stateLabel(r: RoutineView, held = false): { text: string; tone: 'ok' | 'muted' | 'warn' | 'danger' } {
  if (r.problem !== null) return { text: 'Cannot run', tone: 'danger' };
  // HEARTBEAT.md was replaced while a sandboxed command ran: nothing in it runs until Trust.
  if (held && r.removed_at === null) return { text: 'Waiting for Trust', tone: 'warn' };
  if (r.state === 'failed') return { text: 'Failed', tone: 'danger' };
  if (r.state === 'running') return { text: 'Running', tone: 'ok' };
  if (r.state === 'done') return { text: 'Done', tone: 'muted' };
  if (r.suggested && !r.enabled) return { text: 'Suggested', tone: 'muted' };
  if (!r.enabled) return { text: 'Paused', tone: 'warn' };
  return { text: 'Active', tone: 'ok' };
}

/** Who made the routine: you (in the editor, or by asking in a conversation) or Vigil on its own;
 *  in a held HEARTBEAT.md nobody can say (a sandboxed command may have written it). */
export function madeBy(r: RoutineView, held = false): string {
  if (held) return 'In the replaced HEARTBEAT.md: not known who wrote it';
  if (r.suggested) return 'Suggested by Vigil from what you wrote: turn it on to use it';
  if (r.source === 'heartbeat_reflect') return 'Added by Vigil on its own';
  if (r.source === 'chat') return 'Added by you, in a conversation';
  return 'Added by you';
}

/** The routines in use, in file order, and the removed ones, most recently removed first. */
export function splitRemoved(routines: readonly RoutineView[]): { inUse: RoutineView[]; removed: RoutineView[] } {
  const inUse: RoutineView[] = [];
  const removed: RoutineView[] = [];
  for (const r of routines) (r.removed_at === null ? inUse : removed).push(r);
  removed.sort((a, b) => (b.removed_at ?? 0) - (a.removed_at ?? 0));
  return { inUse, removed };
}

/** The banner over a corrupted task block: what is wrong, and what runs meanwhile. */
export interface CorruptedBanner {
  /** Bold: "The routines in HEARTBEAT.md cannot be read". */
  lead: string;
  /** What is wrong (the core's words) and what runs meanwhile. */
  detail: string;
  /** What the user can do. */
  repair: string;
}

/**
 * The banner for a view whose block is corrupted. While the core has a good copy, the last
 * good routines are listed and keep running; any change repairs the block from them.
 */
export function corruptedBanner(view: { error: string | null; routines: RoutineView[] }): CorruptedBanner {
  const lead = 'The routines in HEARTBEAT.md cannot be read';
  const error = view.error ?? 'the task block is not valid JSON';
  if (view.routines.length > 0) {
    return {
      lead,
      detail: `${error}. The routines below are the last good version: they keep running as before.`,
      repair:
        'Any change here, or asking Vigil for one, writes them back as a valid block; so does Restore. Or fix the file by hand. The broken file is kept beside it as HEARTBEAT.md.corrupt.',
    };
  }
  return {
    lead,
    detail: `${error}.`,
    repair: 'Fix the file by hand, or go back to the last version that worked (the broken file is kept beside it).',
  };
}
