// A search result opens its conversation at that very message: found by its stable id among
// the loaded messages, never by its place or its time, which several messages can share.
import { describe, expect, it } from 'vitest';
import type { Message } from '../lib/protocol';
import { withHistory } from './history';
import { initialState } from './model';
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
// Four messages of one millisecond (ids m0…m3), then a later one (m4).
const state = loaded([userTurn('check the disk', T), call, result, msg('assistant', 'The disk is 91% full.', T), msg('user', 'thanks', T + 9)]);
const text = (index: number) => JSON.stringify(state.items[index]);
const row = (messageId: string, hidden: ReadonlySet<string> = new Set()) => messageRow(state.items, state.savedRows, hidden, { messageId });

describe('the row a search result opens at', () => {
  it('is the result’s own message among several of the same time', () => {
    expect(text(row('m3'))).toContain('The disk is 91% full.');
    expect(text(row('m0'))).toContain('check the disk');
  });

  it('is the call’s card for a tool result', () => {
    expect(text(row('m2'))).toContain('df -h');
  });

  it('follows the id when the transcript’s places moved (earlier lines gone, others in their place)', () => {
    // The same conversation loaded again after its first two lines were cut: the disk reply
    // is now second, and the first place holds another message of the very same time.
    const moved = withHistory(initialState(), {
      session_id: 'main',
      messages: [
        { id: 'dnew', ...msg('assistant', 'A note of the same millisecond.', T) },
        { id: 'm3', ...msg('assistant', 'The disk is 91% full.', T) },
      ],
      warnings: [],
    });
    const at = messageRow(moved.items, moved.savedRows, new Set(), { messageId: 'm3' });
    expect(JSON.stringify(moved.items[at])).toContain('The disk is 91% full.');
  });

  it('is not found (yet) for an id the loaded transcript does not hold', () => {
    expect(row('m-unknown')).toBe(-1);
    expect(messageRow(state.items, undefined, new Set(), { messageId: 'm3' })).toBe(-1);
  });

  it('is the row before a reply that is not shown', () => {
    const reply = state.items[row('m3')].key;
    expect(text(row('m3', new Set([reply])))).toContain('df -h');
  });
});

describe('the row a clicked notification opens at (it names a time, not an id)', () => {
  it('is the first shown message of that time, else the last one before it', () => {
    expect(text(messageRow(state.items, state.savedRows, new Set(), { ts: T }))).toContain('check the disk');
    expect(text(messageRow(state.items, state.savedRows, new Set(), { ts: T + 5 }))).toContain('The disk is 91% full.');
  });
});
