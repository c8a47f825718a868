import { describe, expect, it } from 'vitest';
import type { Event, EventEnvelope, SessionSummary } from '../lib/protocol';
import {
  continuationCount,
  continuationOp,
  continuationTitle,
  continuesOnItsOwn,
  onSessionsChanged,
  relativeTime,
  trackActivity,
  trackUnattended,
} from './state';

const s = (id: string, extra: Partial<SessionSummary> = {}): SessionSummary => ({ id, title: id, created_at: 0, updated_at: 0, continuations: 0, ...extra });
const ev = (event: Event, sessionId: string | null): EventEnvelope =>
  ({ id: 'x', ts: 0, session_id: sessionId, scope: 'primary', source: 'agent', run_id: 'r', ...event }) as EventEnvelope;

describe('sessions', () => {
  it('tracks which sessions have a turn running', () => {
    let running = trackActivity(new Set(), ev({ type: 'turn_started', user_text: 'x' }, 'b'));
    expect([...running]).toEqual(['b']);
    const same = trackActivity(running, ev({ type: 'text_delta', text: 'x' }, 'b'));
    expect(same).toBe(running);
    running = trackActivity(running, ev({ type: 'turn_finished', stop_reason: 'end_turn', usage: { input_tokens: 0, output_tokens: 0 } }, 'b'));
    expect([...running]).toEqual([]);
  });

  it('tracks where Vigil works on its own: only turns it started itself (source background)', () => {
    const finished = ev({ type: 'turn_finished', stop_reason: 'end_turn', usage: { input_tokens: 0, output_tokens: 0 } }, 'b');
    const started = ev({ type: 'turn_started', user_text: 'System: Exec completed (x, code 0) :: done' }, 'b');
    let working = trackUnattended(new Set(), { ...started, source: 'background' });
    expect([...working]).toEqual(['b']);
    // The user's own turn elsewhere is activity, not work on its own.
    expect(trackUnattended(working, ev({ type: 'turn_started', user_text: 'hi' }, 'c'))).toBe(working);
    working = trackUnattended(working, { ...finished, source: 'background' });
    expect([...working]).toEqual([]);
    expect([...trackUnattended(new Set(), started)]).toEqual([]);
  });

  it('counts the turns taken on its own against the limit, and turns continuing off and on per conversation', () => {
    expect(continuationCount(s('a'), 10)).toBeNull();
    expect(continuationCount(s('a', { continuations: 3 }), 10)).toBe('3/10');
    expect(continuationCount(s('a', { continuations: 3, continuation_limit: 5 }), 10)).toBe('3/5');
    expect(continuationCount(s('a', { continuations: 2 }), null)).toBe('2');
    expect(continuationTitle(s('a', { continuations: 1 }), 10)).toBe(
      'Vigil carried on here by itself once since your last message (background commands ended). It stops after 10 in a row.',
    );
    expect(continuesOnItsOwn(s('a'), 10)).toBe(true);
    expect(continuesOnItsOwn(s('a', { continuation_limit: 0 }), 10)).toBe(false);
    expect(continuesOnItsOwn(s('a'), 0)).toBe(false);
    expect(continuesOnItsOwn(s('a', { continuation_limit: 3 }), 0)).toBe(true);
    expect(continuationOp('a', false)).toEqual({ type: 'set_continuation_limit', session_id: 'a', limit: 0 });
    // On: back to the global setting (no limit of its own).
    expect(continuationOp('a', true)).toEqual({ type: 'set_continuation_limit', session_id: 'a' });
  });

  it('opens the conversation just created, and main when the shown one is deleted', () => {
    expect(onSessionsChanged([s('new'), s('main'), s('a')], 'a', new Set(['main', 'a'])).open).toBe('new');
    expect(onSessionsChanged([s('main')], 'a', null).open).toBe('main');
    expect(onSessionsChanged([s('main'), s('a')], 'a', null).open).toBeNull();
  });

  it('says how long ago', () => {
    const now = Date.UTC(2026, 5, 15, 12);
    expect(relativeTime(now - 10_000, now)).toBe('just now');
    expect(relativeTime(now - 5 * 60_000, now)).toBe('5 min');
    expect(relativeTime(now - 3 * 3_600_000, now)).toBe('3 h');
    expect(relativeTime(now - 30 * 3_600_000, now)).toBe('yesterday');
    expect(relativeTime(now - 4 * 86_400_000, now)).toBe('4 days');
  });
});
