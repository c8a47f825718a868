// Tool cards, steering, summaries and sessions in the reducer.
import { describe, expect, it } from 'vitest';
import type { EventEnvelope, Message, Usage } from '../lib/protocol';
import { INTERRUPT_PREFIX } from './content';
import { addPendingUser, applyEvent, endsTurn, initialState, isBusy, type ChatState } from './state';
import { ev, fold, loaded, msg, userTurn } from './testing';

const DIFF = '--- a/src/config.rs\n+++ b/src/config.rs\n@@ -1,2 +1,2 @@\n-old\n+new\n ctx\nReplaced 1 occurrence.';
const usage = (input_tokens: number, output_tokens: number): Usage => ({ input_tokens, output_tokens });

/** One tool-using turn, as saved: read, edit, a steer, a call cut off, the answer. */
function transcript(): Message[] {
  return [
    userTurn('fix the typo', 1),
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 't1', name: 'read', input: { path: 'src/config.rs' } },
      ],
      ts: 2, model: 'm', usage: usage(100, 10), stop_reason: 'tool_use',
    },
    { role: 'tool_result', content: [{ type: 'tool_result', tool_use_id: 't1', content: '1 old', is_error: false }], ts: 3 },
    {
      role: 'assistant',
      content: [
        { type: 'tool_use', id: 't2', name: 'edit', input: { path: 'src/config.rs', old_text: 'old', new_text: 'new' } },
        { type: 'tool_use', id: 't3', name: 'edit', input: { path: 'README.md' } },
      ],
      ts: 4, model: 'm', usage: usage(200, 20), stop_reason: 'tool_use',
    },
    {
      role: 'tool_result',
      content: [
        { type: 'tool_result', tool_use_id: 't2', content: DIFF, is_error: false },
        { type: 'tool_result', tool_use_id: 't3', content: 'old_text not found', is_error: true },
      ],
      ts: 5,
    },
    msg('user', `${INTERRUPT_PREFIX}also the README`, 6, { kind: { type: 'interrupt' } }),
    {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 't4', name: 'read', input: { path: 'README.md' } }],
      ts: 7, model: 'm', usage: usage(300, 30), stop_reason: 'tool_use',
    },
  ];
}

/** The same turn as live events; the last call never reports back (Stop). */
function liveEvents(m: Message[]): EventEnvelope[] {
  const appended = (message: Message) => ev({ type: 'message_appended', message });
  return [
    appended(m[0]),
    ev({ type: 'turn_started', user_text: 'fix the typo' }),
    ev({ type: 'text_delta', text: 'Let me look.' }),
    appended(m[1]),
    ev({ type: 'tool_call_started', call_id: 't1', name: 'read', input: { path: 'src/config.rs' } }),
    ev({ type: 'tool_call_update', call_id: 't1', output: '1 o' }),
    ev({ type: 'tool_call_finished', call_id: 't1', name: 'read', content: '1 old', is_error: false }),
    appended(m[2]),
    appended(m[3]),
    ev({ type: 'tool_call_started', call_id: 't2', name: 'edit', input: { path: 'src/config.rs', old_text: 'old', new_text: 'new' } }),
    ev({ type: 'tool_call_started', call_id: 't3', name: 'edit', input: { path: 'README.md' } }),
    ev({ type: 'tool_call_finished', call_id: 't3', name: 'edit', content: 'old_text not found', is_error: true }),
    ev({ type: 'tool_call_finished', call_id: 't2', name: 'edit', content: DIFF, is_error: false }),
    appended(m[4]),
    appended(m[5]),
    ev({ type: 'queue_consumed', count: 1 }),
    appended(m[6]),
    ev({ type: 'tool_call_started', call_id: 't4', name: 'read', input: { path: 'README.md' } }),
    ev({ type: 'turn_finished', stop_reason: 'cancelled', usage: usage(600, 60) }),
  ];
}

/** What the view shows, without keys, timestamps and run ids. */
function shown(state: ChatState) {
  return state.items.map((i) => ({
    kind: i.kind, role: i.role, text: i.text, tools: i.tools, interrupt: i.interrupt, usage: i.usage,
    pending: i.pending, queued: i.queued, streaming: i.streaming,
  }));
}

describe('tool cards', () => {
  it('are the same whether built from live events or from history after a reload', () => {
    const m = transcript();
    const live = fold(loaded(), liveEvents(m));
    const reloaded = loaded(m);
    expect(shown(live)).toEqual(shown(reloaded));
    expect(live.phase).toBe('idle');

    expect(reloaded.items.map((i) => i.tools.map((c) => [c.name, c.status]))).toEqual([
      [],
      [['read', 'done']],
      [['edit', 'done'], ['edit', 'error']],
      [],
      [['read', 'interrupted']],
    ]);
    expect(reloaded.items[2].tools[0]).toEqual({
      id: 't2', name: 'edit', input: { path: 'src/config.rs', old_text: 'old', new_text: 'new' }, status: 'done', output: DIFF,
    });
    // The turn's tokens go under its last message, summed over its rounds.
    expect(reloaded.items.map((i) => i.usage)).toEqual([null, null, null, null, usage(600, 60)]);
  });

  it('show a running call with its live output, then its result', () => {
    const m = transcript();
    const events = liveEvents(m);
    const running = fold(loaded(), events.slice(0, 6));
    expect(running.items[1].tools).toEqual([
      { id: 't1', name: 'read', input: { path: 'src/config.rs' }, status: 'running', output: '1 o' },
    ]);
    expect(running.phase).toBe('tools');
    expect(isBusy(running)).toBe(true);
    const done = fold(running, events.slice(6, 7));
    expect(done.items[1].tools[0]).toMatchObject({ status: 'done', output: '1 old' });
  });

  it('get a card even when the call was not announced in a saved message first', () => {
    const s = fold(loaded(), [
      ev({ type: 'turn_started', user_text: 'go' }),
      ev({ type: 'tool_call_started', call_id: 'x', name: 'exec', input: { command: 'ls' } }),
      ev({ type: 'tool_call_finished', call_id: 'x', name: 'exec', content: 'a\nb', is_error: false }),
    ]);
    expect(s.items[1].tools).toEqual([{ id: 'x', name: 'exec', input: { command: 'ls' }, status: 'done', output: 'a\nb' }]);
  });

  it('show calls without a result as running when the session is mid-turn', () => {
    const m = transcript();
    const s = loaded(m, true);
    expect(s.items[4].tools[0].status).toBe('running');
    expect(s.items[4].usage).toBeNull();
    expect(isBusy(s)).toBe(true);
  });
});

describe('steering', () => {
  function running(): ChatState {
    return fold(loaded(), [
      ev({ type: 'message_appended', message: userTurn('first', 1) }),
      ev({ type: 'turn_started', user_text: 'first' }),
      ev({ type: 'text_delta', text: 'working' }),
    ]);
  }

  it('shows a queued message at once and clears the marker when it reaches the turn', () => {
    let [s] = addPendingUser(running(), 'also this', 5, true);
    [s] = addPendingUser(s, 'and that', 6, true);
    expect(shown(s).slice(2).map((i) => [i.text, i.queued, i.pending])).toEqual([
      ['also this', true, true],
      ['and that', true, true],
    ]);
    s = fold(s, [ev({ type: 'message_queued', text: 'also this' }, null), ev({ type: 'message_queued', text: 'and that' }, null)]);
    expect(s.items.slice(2).map((i) => i.acked)).toEqual([true, true]);

    // The turn's next step takes the first; the second arrived too late for it.
    const key = s.items[2].key;
    s = fold(s, [
      ev({ type: 'message_appended', message: { role: 'assistant', content: [{ type: 'text', text: 'working' }], ts: 7 } }),
      ev({ type: 'message_appended', message: msg('user', `${INTERRUPT_PREFIX}also this`, 8, { kind: { type: 'interrupt' } }) }),
      ev({ type: 'queue_consumed', count: 1 }),
    ]);
    expect(shown(s).map((i) => [i.role, i.text, i.queued, i.interrupt])).toEqual([
      ['user', 'first', false, false],
      ['assistant', 'working', false, false],
      ['user', 'also this', false, true],
      ['user', 'and that', true, false],
    ]);
    expect(s.items[2].key).toBe(key);
    expect(s.consumedAhead).toBe(0);
  });

  it('clears markers on queue_consumed even without the saved copies (oldest first)', () => {
    let s = running();
    s = fold(s, [
      ev({ type: 'message_queued', text: 'one' }, null),
      ev({ type: 'message_queued', text: 'two' }, null),
      ev({ type: 'queue_consumed', count: 1 }, null),
    ]);
    expect(shown(s).slice(2).map((i) => [i.text, i.queued])).toEqual([
      ['one', false],
      ['two', true],
    ]);
  });

  it('after Stop, keeps queued messages as plain saved messages', () => {
    let [s] = addPendingUser(running(), 'wait', 5, true);
    s = fold(s, [
      ev({ type: 'message_queued', text: 'wait' }, null),
      ev({ type: 'message_appended', message: msg('assistant', 'working', 7, { stop_reason: 'cancelled' }) }),
      ev({ type: 'turn_finished', stop_reason: 'cancelled', usage: usage(0, 0) }),
      ev({ type: 'message_appended', message: msg('user', 'wait', 9) }, null),
      ev({ type: 'queue_consumed', count: 1 }, null),
    ]);
    expect(shown(s).map((i) => [i.text, i.pending, i.queued, i.interrupt])).toEqual([
      ['first', false, false, false],
      ['working', false, false, false],
      ['wait', false, false, false],
    ]);
    expect(s.items[1].stopped).toBe(true);
  });

  it('starts the next turn with messages that arrived too late, joined', () => {
    let [s] = addPendingUser(running(), 'a', 5, true);
    [s] = addPendingUser(s, 'b', 6, true);
    s = fold(s, [
      ev({ type: 'message_queued', text: 'a' }, null),
      ev({ type: 'message_queued', text: 'b' }, null),
      ev({ type: 'turn_finished', stop_reason: 'error', usage: usage(0, 0) }),
      ev({ type: 'message_appended', message: userTurn('a\n\nb', 9) }, 'r2'),
      ev({ type: 'turn_started', user_text: 'a\n\nb' }, 'r2'),
    ]);
    expect(shown(s).map((i) => [i.role, i.text, i.queued, i.streaming])).toEqual([
      ['user', 'first', false, false],
      ['assistant', 'working', false, false],
      ['user', 'a\n\nb', false, false],
      ['assistant', '', false, true],
    ]);
  });

  it('copes with message_queued arriving after the message was delivered', () => {
    let [s] = addPendingUser(running(), 'quick', 5, true);
    s = fold(s, [
      ev({ type: 'message_appended', message: msg('user', `${INTERRUPT_PREFIX}quick`, 8, { kind: { type: 'interrupt' } }) }),
      ev({ type: 'queue_consumed', count: 1 }),
      ev({ type: 'message_queued', text: 'quick' }, null),
    ]);
    expect(shown(s).filter((i) => i.role === 'user').map((i) => [i.text, i.queued, i.pending])).toEqual([
      ['first', false, false],
      ['quick', false, false],
    ]);
  });

  it('shows a message queued from elsewhere', () => {
    const s = applyEvent(running(), ev({ type: 'message_queued', text: 'from the CLI' }, null));
    expect(shown(s).at(-1)).toMatchObject({ role: 'user', text: 'from the CLI', queued: true });
  });
});

describe('saved messages', () => {
  it('strips the steering prefix and marks the message', () => {
    const s = loaded([msg('user', `${INTERRUPT_PREFIX}stop using tabs`, 1, { kind: { type: 'interrupt' } })]);
    expect(s.items[0]).toMatchObject({ text: 'stop using tabs', interrupt: true, kind: 'message' });
    // Older files may lack the kind; the prefix alone is enough.
    expect(loaded([msg('user', `${INTERRUPT_PREFIX}x`, 1)]).items[0]).toMatchObject({ text: 'x', interrupt: true });
  });

  it('never shows context blocks, and still de-duplicates messages that carry them', () => {
    const user = userTurn('hello', 1);
    const s = fold(loaded([user]), [ev({ type: 'message_appended', message: user })]);
    expect(s.items).toHaveLength(1);
    expect(s.items[0].text).toBe('hello');
    expect(JSON.stringify(s.items)).not.toContain('Current time');
  });

  it('recognises summary messages, by kind or by heading', () => {
    const body = 'The user asked about Rust.';
    const byKind = msg('user', `[Summary of the earlier conversation]\n\n${body}`, 1, { kind: { type: 'summary', replaces_before: 4 } });
    const byHeading = msg('user', `[Summary of the earlier conversation]\n\n${body}`, 1);
    for (const m of [byKind, byHeading]) {
      expect(loaded([m]).items[0]).toMatchObject({ kind: 'summary', role: 'user', text: body, compaction: null });
    }
    // A summary is not where a turn starts: the usage of the turn around it is summed across it.
    const s = loaded([
      userTurn('q', 1),
      msg('assistant', 'a', 2, { usage: usage(1, 1) }),
      byKind,
      msg('assistant', 'b', 3, { usage: usage(2, 2) }),
    ]);
    expect(s.items.map((i) => i.usage)).toEqual([null, null, null, usage(3, 3)]);
  });

  it('puts compaction details on the summary saved by the running turn', () => {
    const summary = msg('user', '[Summary of the earlier conversation]\n\nEarlier.', 5, { kind: { type: 'summary', replaces_before: 2 } });
    const s = fold(loaded(), [
      ev({ type: 'message_appended', message: userTurn('next', 4) }),
      ev({ type: 'turn_started', user_text: 'next' }),
      ev({ type: 'message_appended', message: summary }),
      ev({ type: 'compacted', summarized_messages: 2, tokens_before: 9000, tokens_after: 800 }),
      ev({ type: 'text_delta', text: 'ok' }),
    ]);
    expect(shown(s).map((i) => [i.kind, i.text])).toEqual([
      ['message', 'next'],
      ['summary', 'Earlier.'],
      ['message', 'ok'],
    ]);
    expect(s.items[1].compaction).toEqual({ summarizedMessages: 2, tokensBefore: 9000, tokensAfter: 800 });
  });
});

describe('turn info', () => {
  it('puts the usage under the last reply and a policy stop in a notice', () => {
    const s = fold(loaded(), [
      ev({ type: 'turn_started', user_text: 'go' }),
      ev({ type: 'text_delta', text: 'step' }),
      ev({ type: 'message_appended', message: msg('assistant', 'step', 3) }),
      ev({ type: 'turn_finished', stop_reason: 'policy', usage: usage(1234, 56), detail: 'Too many tool rounds.' }),
    ]);
    expect(shown(s).map((i) => [i.kind, i.text, i.usage])).toEqual([
      ['message', 'go', null],
      ['message', 'step', usage(1234, 56)],
      ['notice', 'Too many tool rounds.', null],
    ]);
    expect(endsTurn(s.items, 1)).toBe(true);
    expect(isBusy(s)).toBe(false);
  });

  it('marks only the last of consecutive assistant messages as the end of the turn', () => {
    const s = loaded(transcript());
    expect(s.items.map((_, i) => endsTurn(s.items, i))).toEqual([false, false, true, false, true]);
  });
});

describe('sessions', () => {
  it('ignores events of another session', () => {
    const before = loaded(transcript());
    const other = (e: Parameters<typeof ev>[0]) => ev(e, 'r9', 'other');
    const s = fold(before, [
      other({ type: 'turn_started', user_text: 'elsewhere' }),
      other({ type: 'tool_call_started', call_id: 't4', name: 'read', input: {} }),
      other({ type: 'tool_call_finished', call_id: 't4', name: 'read', content: 'x', is_error: false }),
      other({ type: 'message_queued', text: 'q' }),
      other({ type: 'queue_consumed', count: 1 }),
      other({ type: 'turn_finished', stop_reason: 'policy', usage: usage(1, 1), detail: 'no' }),
    ]);
    expect(shown(s)).toEqual(shown(before));
    expect(s.phase).toBe('idle');
  });

  it('starts empty for the session it is told to show', () => {
    expect(initialState('s-2')).toMatchObject({ sessionId: 's-2', items: [] });
  });
});
