import { describe, expect, it } from 'vitest';
import type { Event, EventEnvelope, SessionSummary } from '../lib/protocol';
import { onSessionsChanged, relativeTime, trackActivity } from './state';

const s = (id: string): SessionSummary => ({ id, title: id, created_at: 0, updated_at: 0 });
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
