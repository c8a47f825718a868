// The "Working on its own" settings, pure: how many turns in a row Vigil may take by itself
// after a background command it started ends (0: never), how long an unattended approval
// waits before it is denied (the pane types minutes; the core keeps seconds), and how long
// an absence is before the "While you were away" card.

/** vigil-protocol `DEFAULT_CONTINUATION_LIMIT`: what "on" goes back to. */
export const DEFAULT_LIMIT = 10;
/** The most turns in a row the field takes: beyond that, "on its own" has no limit worth the name. */
export const MAX_LIMIT = 100;
/** One day: a question left longer than that is better asked again. */
export const MAX_TIMEOUT_MINUTES = 24 * 60;

export type Parsed = { ok: true; value: number } | { ok: false; error: string };

function whole(text: string): number | null {
  const t = text.trim();
  return /^\d+$/.test(t) ? Number(t) : null;
}

/** The limit field: a whole number from 1 to 100 (turning it off is the checkbox's job). */
export function parseLimit(text: string): Parsed {
  const n = whole(text);
  if (n === null || n < 1 || n > MAX_LIMIT) return { ok: false, error: `Enter a whole number of turns from 1 to ${MAX_LIMIT}.` };
  return { ok: true, value: n };
}

/** The timeout field, in minutes; the value is in seconds, as saved. */
export function parseTimeoutMinutes(text: string): Parsed {
  const n = whole(text);
  if (n === null || n < 1 || n > MAX_TIMEOUT_MINUTES) {
    return { ok: false, error: `Enter a whole number of minutes from 1 to ${MAX_TIMEOUT_MINUTES} (24 hours).` };
  }
  return { ok: true, value: n * 60 };
}

/** Saved seconds as the field shows them (rounded up: a 90 s timeout shows as 2). */
export function minutesOf(secs: number): number {
  return Math.max(1, Math.ceil(secs / 60));
}

/** vigil-core `MAX_AWAY_AFTER_MINUTES`: a day. */
export const MAX_AWAY_MINUTES = 24 * 60;

/** The absence before the "While you were away" card, in minutes, as saved. */
export function parseAwayMinutes(text: string): Parsed {
  const n = whole(text);
  if (n === null || n < 1 || n > MAX_AWAY_MINUTES) {
    return { ok: false, error: `Enter a whole number of minutes from 1 to ${MAX_AWAY_MINUTES} (24 hours).` };
  }
  return { ok: true, value: n };
}
