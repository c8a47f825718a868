// The heartbeat settings form, pure: its shape, the checks that are obvious before asking
// the core (a time that is not HH:MM, a count that is not a whole number), and the
// settings it sends. The core checks everything again and names what it refuses.

import type { HeartbeatSettings } from '../lib/protocol';

/** What the form edits; numbers are strings because that is what the inputs hold. */
export interface HeartbeatForm {
  enabled: boolean;
  every: string;
  start: string;
  end: string;
  timezone: string;
  ackMaxChars: string;
  prompt: string;
  model: string;
  notifications: boolean;
  /** Tokens background work may use per day; empty or 0: no budget. */
  dailyTokenBudget: string;
  /** Hours without a user message before quiet runs stretch the interval; 0: off. */
  idleAfterHours: string;
  /** The longest a heartbeat run may take, in minutes, before it is ended. */
  runTimeoutMinutes: string;
  /** The daily reflection looks for routines the user asked for. */
  reflect: boolean;
  /** Its period when on, kept as the settings had it (24 by default). */
  reflectionEveryHours: number;
  /** What reflection finds is made at once, not suggested. */
  reflectionAddsRoutines: boolean;
}

export type HeartbeatField =
  | 'every'
  | 'start'
  | 'end'
  | 'timezone'
  | 'ackMaxChars'
  | 'dailyTokenBudget'
  | 'idleAfterHours'
  | 'runTimeoutMinutes';
export type FieldErrors = Partial<Record<HeartbeatField, string>>;

/** The core's upper bound for `ackMaxChars` (`MAX_ACK_MAX_CHARS`). */
export const MAX_ACK_MAX_CHARS = 20_000;
/** The core's upper bound for `runTimeoutMinutes` (`MAX_RUN_TIMEOUT_MINUTES`, a day). */
export const MAX_RUN_TIMEOUT_MINUTES = 24 * 60;

export function formFromSettings(s: HeartbeatSettings): HeartbeatForm {
  return {
    enabled: s.enabled,
    every: s.every,
    start: s.activeHours?.start ?? '',
    end: s.activeHours?.end ?? '',
    timezone: s.activeHours?.timezone ?? '',
    ackMaxChars: String(s.ackMaxChars),
    prompt: s.prompt ?? '',
    model: s.model ?? '',
    notifications: s.notifications,
    dailyTokenBudget: s.dailyTokenBudget > 0 ? String(s.dailyTokenBudget) : '',
    idleAfterHours: String(s.idleAfterHours),
    runTimeoutMinutes: String(s.runTimeoutMinutes),
    reflect: s.reflectionEveryHours > 0,
    reflectionEveryHours: s.reflectionEveryHours > 0 ? s.reflectionEveryHours : DEFAULT_REFLECTION_HOURS,
    reflectionAddsRoutines: s.reflectionAddsRoutines,
  };
}

/** The core's default period of the reflection. */
export const DEFAULT_REFLECTION_HOURS = 24;

/** `HH:MM` → minutes since midnight; `24:00` only where `allow24` (an end). As the core's `parse_hhmm`. */
export function parseHhmm(text: string, allow24: boolean): number | null {
  const m = /^(\d{1,2}):(\d{2})$/.exec(text.trim());
  if (!m) return null;
  const [h, min] = [Number(m[1]), Number(m[2])];
  if (h === 24 && min === 0 && allow24) return 1440;
  return h <= 23 && min <= 59 ? h * 60 + min : null;
}

/** A bare number (minutes) or number-unit pairs (`30m`, `1h30m`, `45s`, `2 hours`). */
const EVERY = /^(\d+(\.\d+)?|(\d+\s*[a-zµ]+\s*)+)$/i;

/** Whether the browser knows the zone; "local" means this computer's. */
export function knownTimeZone(zone: string): boolean {
  if (zone.toLowerCase() === 'local') return true;
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export function validate(form: HeartbeatForm): FieldErrors {
  const errors: FieldErrors = {};
  const every = form.every.trim();
  if (every === '') errors.every = 'Enter an interval such as 30m, or 0 to turn interval runs off.';
  else if (!EVERY.test(every)) errors.every = `“${every}” is not a duration (examples: 30m, 1h, 1h30m, or 45 for minutes).`;

  const start = form.start.trim();
  const end = form.end.trim();
  if (start !== '' && parseHhmm(start, false) === null) errors.start = 'Use HH:MM, from 00:00 to 23:59.';
  if (end !== '' && parseHhmm(end, true) === null) errors.end = 'Use HH:MM, from 00:00 to 24:00.';
  if (start === '' && end !== '' && !errors.end) errors.start = 'Give a start time too, or clear the end.';
  if (end === '' && start !== '' && !errors.start) errors.end = 'Give an end time too, or clear the start.';

  const zone = form.timezone.trim();
  if (zone !== '' && start === '' && end === '') errors.timezone = 'The time zone applies to active hours: set start and end too.';
  else if (zone !== '' && !knownTimeZone(zone)) errors.timezone = `“${zone}” is not a time zone this computer knows (e.g. Europe/Berlin).`;

  const ack = form.ackMaxChars.trim();
  const n = Number(ack);
  if (!/^\d+$/.test(ack) || !Number.isSafeInteger(n) || n > MAX_ACK_MAX_CHARS) {
    errors.ackMaxChars = `A whole number from 0 to ${MAX_ACK_MAX_CHARS.toLocaleString('en-US')}.`;
  }
  const budget = form.dailyTokenBudget.trim();
  if (budget !== '' && (!/^\d+$/.test(budget) || !Number.isSafeInteger(Number(budget)))) {
    errors.dailyTokenBudget = 'A whole number of tokens, or empty for no budget.';
  }
  const idle = form.idleAfterHours.trim();
  if (!/^\d+$/.test(idle) || Number(idle) > 24 * 366) errors.idleAfterHours = 'A whole number of hours (0 turns the idle gate off).';
  const limit = form.runTimeoutMinutes.trim();
  if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_RUN_TIMEOUT_MINUTES) {
    errors.runTimeoutMinutes = `A whole number of minutes from 1 to ${MAX_RUN_TIMEOUT_MINUTES.toLocaleString('en-US')}.`;
  }
  return errors;
}

/** The settings to send, or the fields to fix. */
export function settingsFromForm(form: HeartbeatForm): { settings: HeartbeatSettings } | { errors: FieldErrors } {
  const errors = validate(form);
  if (Object.keys(errors).length > 0) return { errors };
  const settings: HeartbeatSettings = {
    enabled: form.enabled,
    every: form.every.trim(),
    ackMaxChars: Number(form.ackMaxChars.trim()),
    notifications: form.notifications,
    dailyTokenBudget: form.dailyTokenBudget.trim() === '' ? 0 : Number(form.dailyTokenBudget.trim()),
    idleAfterHours: Number(form.idleAfterHours.trim()),
    runTimeoutMinutes: Number(form.runTimeoutMinutes.trim()),
    reflectionEveryHours: form.reflect ? form.reflectionEveryHours : 0,
    reflectionAddsRoutines: form.reflectionAddsRoutines,
  };
  if (form.start.trim() !== '') {
    const timezone = form.timezone.trim();
    settings.activeHours = { start: form.start.trim(), end: form.end.trim(), ...(timezone ? { timezone } : {}) };
  }
  if (form.prompt.trim() !== '') settings.prompt = form.prompt;
  if (form.model.trim() !== '') settings.model = form.model.trim();
  return { settings };
}

/** A hint under the fields that are right but easy to misread. */
export function everyNote(every: string): string | null {
  const text = every.trim();
  if (!/^\d+(\.\d+)?$/.test(text)) return null;
  const minutes = Number(text);
  if (minutes === 0) return 'Interval runs are off; finished background commands and routines still wake Vigil.';
  return `Every ${minutes} ${minutes === 1 ? 'minute' : 'minutes'}.`;
}

export function hoursNote(form: HeartbeatForm): string | null {
  const start = parseHhmm(form.start, false);
  const end = parseHhmm(form.end, true);
  if (start === null || end === null) return null;
  if (start === end) return 'Start and end are the same: the heartbeat would never run on its interval.';
  if (end < start) return 'The window runs across midnight.';
  return null;
}

/** The browser's zone, as the placeholder of the time zone field. */
export function localTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'local';
  } catch {
    return 'local';
  }
}
