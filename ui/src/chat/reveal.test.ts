// A search result opens its conversation at that very message: found by its place in the
// transcript (checked by its time), not by its time alone, which several messages can share.
import { describe, expect, it } from 'vitest';
import type { Message } from '../lib/protocol';
import { messageRow } from './reveal';
import { loaded, msg, userTurn } from './testing';

const T = 5_000;
const call: Message = {
  role: 'assistant',
  content: [{ type: 'tool_use', id: 't1', name: 'exec', input: { command: 'df -h' } }],
  ts: T,
  stop_reason: 'tool_use',
};
const result: Message = { role: 'tool_result', content: [{ type: 'tool_result', tool_use_id: 't1', content: '91%', is_error: false }], ts: T };
// Four messages of one millisecond, then a later one.
const state = loaded([userTurn('check the disk', T), call, result, msg('assistant', 'The disk is 91% full.', T), msg('user', 'thanks', T + 9)]);
const text = (index: number) => JSON.stringify(state.items[index]);

describe('the row a search result opens at', () => {
  it('is the result’s own message among several of the same time', () => {
    expect(text(messageRow(state.items, state.saved, new Set(), { ts: T, seq: 3 }))).toContain('The disk is 91% full.');
    expect(text(messageRow(state.items, state.saved, new Set(), { ts: T, seq: 0 }))).toContain('check the disk');
  });

  it('is the call’s card for a tool result', () => {
    expect(text(messageRow(state.items, state.saved, new Set(), { ts: T, seq: 2 }))).toContain('df -h');
  });

  it('falls back to the time when the place holds another message (a transcript loaded anew)', () => {
    expect(messageRow(state.items, state.saved, new Set(), { ts: T + 9, seq: 3 })).toBe(state.items.length - 1);
    expect(text(messageRow(state.items, undefined, new Set(), { ts: T }))).toContain('check the disk');
  });
});
