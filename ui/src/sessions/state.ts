// The sidebar's rules, pure: which conversations have a turn running (and which of those
// Vigil started on its own), which one to show after the list changes (a new one just
// created, the shown one deleted), how old an entry looks, and how many turns it took on
// its own. `sessions.svelte.ts` holds the state and does the IPC.

import { shortDate } from '../lib/time';
import { PRIMARY_SESSION } from '../lib/ipc';
import type { EventEnvelope, Op, SessionSummary } from '../lib/protocol';

/** Sessions with a turn running, after `event`; the same set when nothing changed. */
export function trackActivity(running: ReadonlySet<string>, event: EventEnvelope): ReadonlySet<string> {
  const id = event.session_id;
  if (id === null) return running;
  if (event.type === 'turn_started' && !running.has(id)) return new Set(running).add(id);
  if (event.type === 'turn_finished' && running.has(id)) {
    const next = new Set(running);
    next.delete(id);
    return next;
  }
  return running;
}

/**
 * Sessions where a turn Vigil started on its own runs (a background command it started there
 * ended: a continuation), after `event`; the same set when nothing changed.
 */
export function trackUnattended(working: ReadonlySet<string>, event: EventEnvelope): ReadonlySet<string> {
  const id = event.session_id;
  if (id === null) return working;
  if (event.type === 'turn_started' && event.source === 'background' && !working.has(id)) return new Set(working).add(id);
  if (event.type === 'turn_finished' && working.has(id)) {
    const next = new Set(working);
    next.delete(id);
    return next;
  }
  return working;
}

/** This conversation's limit on turns on its own in a row: its own, else the global one (`null`: not known yet). */
export function limitOf(session: SessionSummary, global: number | null): number | null {
  return session.continuation_limit ?? global;
}

/** Whether Vigil carries on here by itself when a background command ends. */
export function continuesOnItsOwn(session: SessionSummary, global: number | null): boolean {
  return limitOf(session, global) !== 0;
}

/** The sidebar's count of turns on its own: "3", or "3/10" when the limit is known; null when none ran. */
export function continuationCount(session: SessionSummary, global: number | null): string | null {
  if (session.continuations === 0) return null;
  const limit = limitOf(session, global);
  return limit === null || limit === 0 ? `${session.continuations}` : `${session.continuations}/${limit}`;
}

/** The count's tooltip. */
export function continuationTitle(session: SessionSummary, global: number | null): string {
  const n = session.continuations;
  const times = n === 1 ? 'once' : `${n} times`;
  const limit = limitOf(session, global);
  const stop = limit !== null && limit > 0 ? ` It stops after ${limit} in a row.` : '';
  return `Vigil carried on here by itself ${times} since your last message (background commands ended).${stop}`;
}

/** The set_continuation_limit op: `on` goes back to the global limit, off is 0 here. */
export function continuationOp(sessionId: string, on: boolean): Op {
  return on ? { type: 'set_continuation_limit', session_id: sessionId } : { type: 'set_continuation_limit', session_id: sessionId, limit: 0 };
}

export interface ListChange {
  list: SessionSummary[];
  /** The session to show now, if the shown one should change. */
  open: string | null;
}

/**
 * Takes a new list. `creating`: the ids known when "New conversation" was pressed, so the
 * one that was not there is the new one; null when nothing is being created.
 */
export function onSessionsChanged(
  sessions: SessionSummary[],
  active: string,
  creating: ReadonlySet<string> | null,
): ListChange {
  const created = creating === null ? undefined : sessions.find((s) => !creating.has(s.id));
  if (created) return { list: sessions, open: created.id };
  if (active !== PRIMARY_SESSION && !sessions.some((s) => s.id === active)) {
    return { list: sessions, open: PRIMARY_SESSION };
  }
  return { list: sessions, open: null };
}

/** The list with one title changed, before the core confirms it. */
export function renamed(list: SessionSummary[], id: string, title: string): SessionSummary[] {
  return list.map((s) => (s.id === id ? { ...s, title } : s));
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** "just now", "5 min", "3 h", "yesterday", "4 days", then a date. */
export function relativeTime(ts: number, now: number): string {
  const age = Math.max(0, now - ts);
  if (age < MINUTE) return 'just now';
  if (age < HOUR) return `${Math.floor(age / MINUTE)} min`;
  if (age < DAY) return `${Math.floor(age / HOUR)} h`;
  if (age < 2 * DAY) return 'yesterday';
  if (age < 7 * DAY) return `${Math.floor(age / DAY)} days`;
  const sameYear = new Date(ts).getFullYear() === new Date(now).getFullYear();
  return shortDate(ts, !sameYear);
}

/** What a title looks like in the list; the core keeps whatever it was given. */
export function shownTitle(session: SessionSummary): string {
  const title = session.title.trim();
  if (title) return title;
  return session.id === PRIMARY_SESSION ? 'Main conversation' : 'Untitled';
}
