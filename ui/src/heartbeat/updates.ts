// Background updates, pure: results of the heartbeat, background commands and routines
// that reached a session's mailbox, whether the core has read them yet (a turn reads them
// into its context), whether the user has looked at them here, and where each card goes
// among the chat's items. No Svelte, no IPC: `updates.svelte.ts` holds the state.
//
// They are not transcript messages (`history` never returns them) and there is no command
// listing old ones, so this state lives beside the chat's, across session switches, from
// the moment the window starts.

import type { ChatItem } from '../chat/state';
import { PRIMARY_SESSION } from '../lib/ipc';
import type { BackgroundUpdate, EventEnvelope } from '../lib/protocol';

export interface Update extends BackgroundUpdate {
  /** The session whose mailbox holds it (usually the primary one). */
  sessionId: string;
  /** Not read by a turn yet (`background_updates_read` has not named it). */
  unread: boolean;
  /** The user went to it with the bell; it no longer counts in the badges. */
  seen: boolean;
}

export interface UpdatesState {
  /** Oldest first (by `created_at`). */
  updates: Update[];
  /** Ids a turn has read, so an update arriving after its read event starts read. Bounded. */
  read: string[];
}

/** Read updates kept for display; unread ones are never dropped for space. */
const KEEP_READ = 300;
const READ_IDS_LIMIT = 500;

export function initialUpdates(): UpdatesState {
  return { updates: [], read: [] };
}

function bounded(updates: Update[]): Update[] {
  let extra = updates.filter((u) => !u.unread).length - KEEP_READ;
  if (extra <= 0) return updates;
  return updates.filter((u) => u.unread || extra-- <= 0);
}

function insertByTime(updates: Update[], update: Update): Update[] {
  const at = updates.findIndex((u) => u.created_at > update.created_at);
  return at < 0 ? [...updates, update] : [...updates.slice(0, at), update, ...updates.slice(at)];
}

/** Folds one core event in; returns the same object when nothing changed. */
export function applyUpdateEvent(state: UpdatesState, event: EventEnvelope): UpdatesState {
  switch (event.type) {
    case 'background_update': {
      // One card per event id: a replayed event or a second delivery never shows the text twice.
      if (state.updates.some((u) => u.event_id === event.update.event_id)) return state;
      const update: Update = {
        ...event.update,
        sessionId: event.session_id ?? PRIMARY_SESSION,
        unread: !state.read.includes(event.update.event_id),
        seen: false,
      };
      return { ...state, updates: bounded(insertByTime(state.updates, update)) };
    }
    case 'background_updates_read': {
      const ids = new Set(event.event_ids);
      if (ids.size === 0) return state;
      const read = [...state.read, ...event.event_ids.filter((id) => !state.read.includes(id))].slice(-READ_IDS_LIMIT);
      const updates = state.updates.some((u) => u.unread && ids.has(u.event_id))
        ? state.updates.map((u) => (u.unread && ids.has(u.event_id) ? { ...u, unread: false } : u))
        : state.updates;
      return { updates: bounded(updates), read };
    }
    case 'sessions_changed': {
      const ids = new Set(event.sessions.map((s) => s.id));
      const kept = state.updates.filter((u) => ids.has(u.sessionId) || u.sessionId === PRIMARY_SESSION);
      return kept.length === state.updates.length ? state : { ...state, updates: kept };
    }
    default:
      return state;
  }
}

/** Counts in the badges: unread by the core and not yet looked at here. */
export function isUnseen(update: Update): boolean {
  return update.unread && !update.seen;
}

export function unseenBySession(state: UpdatesState): ReadonlyMap<string, number> {
  const counts = new Map<string, number>();
  for (const u of state.updates) if (isUnseen(u)) counts.set(u.sessionId, (counts.get(u.sessionId) ?? 0) + 1);
  return counts;
}

/** The card the bell goes to: the oldest one still counted. */
export function oldestUnseen(state: UpdatesState): Update | null {
  return state.updates.find(isUnseen) ?? null;
}

/** The user went to a session's updates: they leave the badges (the core's unread stays). */
export function markSeen(state: UpdatesState, sessionId: string): UpdatesState {
  if (!state.updates.some((u) => u.sessionId === sessionId && isUnseen(u))) return state;
  return { ...state, updates: state.updates.map((u) => (u.sessionId === sessionId && isUnseen(u) ? { ...u, seen: true } : u)) };
}

export function updatesOf(state: UpdatesState, sessionId: string): Update[] {
  return state.updates.filter((u) => u.sessionId === sessionId);
}

/** Where a session's cards go among its chat items. */
export interface UpdatePlacement {
  /** Older than every item on screen (or nothing is on screen yet). */
  start: Update[];
  /** Cards to show right after the item with that key, oldest first. */
  after: Map<string, Update[]>;
}

/**
 * Each card follows the last confirmed item from before it was created, so it sits at its
 * time among the messages. Messages still being sent are never anchors: a card that
 * arrives while one is on its way stays above it.
 */
export function placeUpdates(items: ChatItem[], updates: Update[]): UpdatePlacement {
  const placement: UpdatePlacement = { start: [], after: new Map() };
  const confirmed = items.filter((i) => !i.pending);
  for (const update of [...updates].sort((a, b) => a.created_at - b.created_at)) {
    const anchor = confirmed.findLast((i) => i.ts <= update.created_at);
    if (!anchor) {
      placement.start.push(update);
      continue;
    }
    const list = placement.after.get(anchor.key);
    if (list) list.push(update);
    else placement.after.set(anchor.key, [update]);
  }
  return placement;
}

/**
 * How a card shows its detail. The core's summary is the detail's first line (cut short
 * with "…"), so an expanded card shows the full text *instead of* the summary, never the
 * same sentence twice; a detail that does not start with the summary is shown below it.
 */
export function detailMode(update: BackgroundUpdate): 'none' | 'replaces' | 'adds' {
  const detail = update.detail?.trim() ?? '';
  const summary = update.summary.trim();
  if (detail === '' || detail === summary) return 'none';
  const head = summary.endsWith('…') ? summary.slice(0, -1).trimEnd() : summary;
  return head !== '' && detail.startsWith(head) ? 'replaces' : 'adds';
}

/** "heartbeat", "exec", "routine" (or whatever produced it), for the card's label. */
/** The routine whose job produced `update` (its session is `job_<routine id>_<run>`), among
 *  `routines`; the longest id wins, since ids may hold underscores themselves. */
export function routineOf<R extends { id: string }>(update: BackgroundUpdate, routines: readonly R[]): R | null {
  let best: R | null = null;
  for (const r of routines) {
    if (update.source.startsWith(`job_${r.id}_`) && (best === null || r.id.length > best.id.length)) best = r;
  }
  return best;
}

export function sourceLabel(update: BackgroundUpdate): string {
  const type = update.event_type;
  const source = update.source;
  if (type.startsWith('heartbeat') || source.startsWith('heartbeat')) return 'heartbeat';
  if (type.startsWith('exec') || source.startsWith('exec')) return 'exec';
  if (type.startsWith('job') || type.startsWith('routine') || type.startsWith('cron') || source.startsWith('job') ||
    source.startsWith('routine')) {
    return 'routine';
  }
  return source || type;
}
