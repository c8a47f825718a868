import { describe, expect, it } from 'vitest';
import { ev, loaded, msg } from '../chat/testing';
import { applyEvent } from '../chat/state';
import type { BackgroundUpdate, EventEnvelope, SessionSummary } from '../lib/protocol';
import {
  applyUpdateEvent,
  detailMode,
  initialUpdates,
  markSeen,
  oldestUnseen,
  placeUpdates,
  routineOf,
  sourceLabel,
  unseenBySession,
  updatesOf,
  type UpdatesState,
} from './updates';

function update(id: string, createdAt: number, extra: Partial<BackgroundUpdate> = {}): BackgroundUpdate {
  return {
    event_id: id,
    event_type: 'heartbeat_result',
    source: 'heartbeat_session_main',
    summary: `Update ${id}`,
    priority: 1,
    created_at: createdAt,
    ...extra,
  };
}

const arrived = (u: BackgroundUpdate, session: string | null = 'main'): EventEnvelope =>
  ev({ type: 'background_update', update: u, unread: 1 }, null, session);
const read = (ids: string[], session = 'main'): EventEnvelope => ev({ type: 'background_updates_read', event_ids: ids }, null, session);
const fold = (events: EventEnvelope[], state: UpdatesState = initialUpdates()) => events.reduce(applyUpdateEvent, state);
const shown = (state: UpdatesState) => state.updates.map((u) => ({ id: u.event_id, session: u.sessionId, unread: u.unread, seen: u.seen }));

describe('background updates', () => {
  it('shows each update once, whatever delivers it again', () => {
    const first = arrived(update('a', 10));
    const s = fold([
      first,
      first, // the same envelope replayed after a reconnect
      arrived(update('a', 10, { summary: 'Update a' })), // a second envelope for the same event id
      arrived(update('b', 20)),
    ]);
    expect(shown(s)).toEqual([
      { id: 'a', session: 'main', unread: true, seen: false },
      { id: 'b', session: 'main', unread: true, seen: false },
    ]);
    expect(applyUpdateEvent(s, first)).toBe(s);
  });

  it('clears unread for exactly the ids a turn read', () => {
    let s = fold([arrived(update('a', 10)), arrived(update('b', 20)), arrived(update('c', 30), 's-other')]);
    s = applyUpdateEvent(s, read(['a', 'c']));
    expect(shown(s)).toEqual([
      { id: 'a', session: 'main', unread: false, seen: false },
      { id: 'b', session: 'main', unread: true, seen: false },
      { id: 'c', session: 's-other', unread: false, seen: false },
    ]);
    expect([...unseenBySession(s)]).toEqual([['main', 1]]);
    // Read twice: nothing changes.
    expect(shown(applyUpdateEvent(s, read(['a'])))).toEqual(shown(s));
  });

  it('starts an update read when its read event came first', () => {
    const s = fold([read(['late']), arrived(update('late', 5))]);
    expect(shown(s)).toEqual([{ id: 'late', session: 'main', unread: false, seen: false }]);
  });

  it('keeps updates in time order and counts them per session; an envelope without a session is the primary one', () => {
    const s = fold([arrived(update('late', 30)), arrived(update('early', 10), null), arrived(update('x', 20), 's-trip')]);
    expect(s.updates.map((u) => u.event_id)).toEqual(['early', 'x', 'late']);
    expect([...unseenBySession(s)].sort()).toEqual([
      ['main', 2],
      ['s-trip', 1],
    ]);
    expect(updatesOf(s, 'main').map((u) => u.event_id)).toEqual(['early', 'late']);
  });

  it('the bell goes to the oldest unread update and marks its session seen, keeping the core’s unread', () => {
    let s = fold([arrived(update('m1', 20)), arrived(update('t1', 10), 's-trip'), arrived(update('m2', 30))]);
    expect(oldestUnseen(s)?.event_id).toBe('t1');
    s = markSeen(s, 's-trip');
    expect(shown(s).find((u) => u.id === 't1')).toEqual({ id: 't1', session: 's-trip', unread: true, seen: true });
    expect(oldestUnseen(s)?.event_id).toBe('m1');
    expect([...unseenBySession(s)]).toEqual([['main', 2]]);
    expect(markSeen(s, 's-trip')).toBe(s);
  });

  it('forgets updates of a deleted conversation', () => {
    const sessions = (ids: string[]): SessionSummary[] => ids.map((id) => ({ id, title: id, created_at: 0, updated_at: 0, continuations: 0 }));
    let s = fold([arrived(update('a', 10)), arrived(update('b', 20), 's-gone')]);
    s = applyUpdateEvent(s, ev({ type: 'sessions_changed', sessions: sessions(['main']) }, null, null));
    expect(s.updates.map((u) => u.event_id)).toEqual(['a']);
  });

  it('is ignored by the chat transcript, so its text never shows twice', () => {
    const chat = loaded([msg('user', 'hi', 5)]);
    const next = applyEvent(chat, arrived(update('a', 10)));
    expect(next.items).toEqual(chat.items);
  });

  it('shows a detail that repeats the summary in its place, never both', () => {
    const u = (summary: string, detail?: string) => update('a', 1, { summary, detail });
    expect(detailMode(u('Disk at 93 %.'))).toBe('none');
    expect(detailMode(u('Disk at 93 %.', 'Disk at 93 %.'))).toBe('none');
    expect(detailMode(u('Disk at 93 %.', 'Disk at 93 %.\n\nLargest: ~/Downloads'))).toBe('replaces');
    expect(detailMode(u('A very long first li…', 'A very long first line that goes on'))).toBe('replaces');
    expect(detailMode(u('cargo test finished', 'test result: ok. 212 passed'))).toBe('adds');
  });

  it('names where an update came from', () => {
    expect(sourceLabel(update('a', 1))).toBe('heartbeat');
    expect(sourceLabel(update('a', 1, { event_type: 'exec_completed', source: 'exec' }))).toBe('exec');
    expect(sourceLabel(update('a', 1, { event_type: 'job_completed', source: 'job_7' }))).toBe('routine');
    expect(sourceLabel(update('a', 1, { event_type: 'other', source: 'plugin' }))).toBe('plugin');
  });

  it('finds the routine a job result came from, preferring the longest id', () => {
    const routines = [{ id: 'water' }, { id: 'water_plants' }, { id: 'backup' }];
    const job = (source: string) => update('a', 1, { event_type: 'job_completed', source });
    expect(routineOf(job('job_water_plants_r17'), routines)?.id).toBe('water_plants');
    expect(routineOf(job('job_water_r3'), routines)?.id).toBe('water');
    expect(routineOf(job('job_gone_r1'), routines)).toBeNull();
    expect(routineOf(update('a', 1), routines)).toBeNull();
  });
});

describe('card placement', () => {
  const chat = loaded([
    msg('user', 'first', 100),
    msg('assistant', 'reply one', 200),
    msg('user', 'second', 300),
    msg('assistant', 'reply two', 400),
  ]);
  const keyOf = (text: string) => chat.items.find((i) => i.text === text)!.key;

  it('puts each card after the last message from before it, oldest first', () => {
    const s = fold([
      arrived(update('after-two', 450)),
      arrived(update('before-all', 50)),
      arrived(update('between', 250)),
      arrived(update('same-time', 300)),
      arrived(update('also-after-two', 420)),
    ]);
    const placed = placeUpdates(chat.items, s.updates);
    expect(placed.start.map((u) => u.event_id)).toEqual(['before-all']);
    expect(
      [...placed.after].map(([key, list]) => [chat.items.find((i) => i.key === key)!.text, list.map((u) => u.event_id)]),
    ).toEqual([
      ['reply one', ['between']],
      ['second', ['same-time']],
      ['reply two', ['also-after-two', 'after-two']],
    ]);
    expect(placed.after.get(keyOf('first'))).toBeUndefined();
  });

  it('keeps a card above a message still being sent', () => {
    const withPending = { ...chat.items[0], key: 'p', text: 'typing', pending: true, ts: 500 };
    const placed = placeUpdates([...chat.items, withPending], fold([arrived(update('u', 600))]).updates);
    expect(placed.after.get(keyOf('reply two'))?.map((u) => u.event_id)).toEqual(['u']);
    expect(placed.after.get('p')).toBeUndefined();
  });

  it('puts every card at the start of an empty conversation', () => {
    const placed = placeUpdates([], fold([arrived(update('b', 20)), arrived(update('a', 10))]).updates);
    expect(placed.start.map((u) => u.event_id)).toEqual(['a', 'b']);
    expect(placed.after.size).toBe(0);
  });
});
