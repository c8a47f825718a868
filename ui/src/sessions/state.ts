// The sidebar's rules, pure: which conversations have a turn running, which one to show
// after the list changes (a new one just created, the shown one deleted), and how old an
// entry looks. `sessions.svelte.ts` holds the state and does the IPC.

import { shortDate } from '../lib/time';
import { PRIMARY_SESSION } from '../lib/ipc';
import type { EventEnvelope, SessionSummary } from '../lib/protocol';

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
