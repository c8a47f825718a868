// Turns Vigil takes on its own (continuations) in the chat: the exit notice that starts one
// is a system line, never the user's bubble, whether it comes from history or live; a
// reply that only says there is nothing to tell (NO_REPLY) is not shown.
import { describe, expect, it } from 'vitest';
import type { ContentBlock, EventEnvelope, Message } from '../lib/protocol';
import { isSilentReply, maybeSilentReply, startsTurn, systemView } from './content';
import { endsTurn, silentReplies, type ChatItem } from './state';
import { ev, fold, loaded, msg, userTurn } from './testing';

const PROMPT =
  'A background command you started in this conversation has ended (see the notice above). If the task has a next step, carry on with it. Otherwise tell the user the result in a sentence or two. If there is nothing worth telling, reply exactly NO_REPLY.';
const NOTICE = 'System: Exec completed (a1b2, code 0) :: e2e-done';
const CONTINUATION = `${NOTICE}\n\n${PROMPT}`;
const LIMIT =
  'Vigil stopped continuing on its own after 10 turns in a row without a message from you. The latest notice is kept for your next message; send one to carry on.';

/** A system event as the core saves it; one that opens a continuation carries the turn's context. */
function systemEvent(text: string, ts: number, opensTurn = true): Message {
  const context: ContentBlock = { type: 'context', text: 'Current time: Saturday 2026-11-21 10:00 (UTC+01:00)' };
  const content: ContentBlock[] = opensTurn ? [context, { type: 'text', text }] : [{ type: 'text', text }];
  return { role: 'user', content, ts, kind: { type: 'system_event' } };
}

const assistant = (text: string, ts: number): Message => msg('assistant', text, ts, { model: 'm', stop_reason: 'end_turn' });
const background = (e: EventEnvelope): EventEnvelope => ({ ...e, source: 'background' });
const shape = (items: ChatItem[], hidden: ReadonlySet<string> = new Set()) =>
  items.filter((i) => !hidden.has(i.key)).map((i) => `${i.kind}:${i.role}:${i.text}`);

describe('a continuation in the chat', () => {
  it('shows the saved notice as a system line, and hides a reply that only says NO_REPLY', () => {
    const state = loaded([
      userTurn('run the tests in the background', 1),
      assistant('Started them.', 2),
      systemEvent(CONTINUATION, 3),
      assistant('NO_REPLY', 4),
      systemEvent(LIMIT, 5, false),
      userTurn('say NO_REPLY', 6),
      assistant('NO_REPLY', 7),
    ]);
    const hidden = silentReplies(state.items);
    expect(shape(state.items, hidden)).toEqual([
      'message:user:run the tests in the background',
      'message:assistant:Started them.',
      `system:user:${CONTINUATION}`,
      `system:user:${LIMIT}`,
      'message:user:say NO_REPLY',
      // The user's own turn shows whatever the reply is.
      'message:assistant:NO_REPLY',
    ]);
    // With the silent reply hidden, the reply before the notice closes its turn.
    expect(endsTurn(state.items, 1, hidden)).toBe(true);
  });

  it('live: the notice opens the turn as a system line, not a bubble, and the answer streams under it', () => {
    const saved = systemEvent(CONTINUATION, 3000);
    const state = fold(loaded([userTurn('run it', 1), assistant('Started.', 2)]), [
      background(ev({ type: 'message_appended', message: saved }, 'r9')),
      background(ev({ type: 'turn_started', user_text: CONTINUATION }, 'r9')),
      background(ev({ type: 'text_delta', text: 'The job finished: e2e-done.' }, 'r9')),
    ]);
    expect(shape(state.items)).toEqual([
      'message:user:run it',
      'message:assistant:Started.',
      `system:user:${CONTINUATION}`,
      'message:assistant:The job finished: e2e-done.',
    ]);
    expect(state.phase).toBe('streaming');
  });

  it('live, when the saved notice was missed (the view opened mid-turn): turn_started still makes a system line', () => {
    const state = fold(loaded([userTurn('run it', 1)]), [background(ev({ type: 'turn_started', user_text: CONTINUATION }, 'r9'))]);
    expect(state.items.map((i) => i.kind)).toEqual(['message', 'system', 'message']);
    expect(state.items.filter((i) => i.kind === 'message' && i.role === 'user')).toHaveLength(1);
  });

  it('a streaming NO_REPLY is hidden from its first letters; a real answer shows', () => {
    let state = fold(loaded([userTurn('run it', 1)]), [
      background(ev({ type: 'message_appended', message: systemEvent(CONTINUATION, 3000) }, 'r9')),
      background(ev({ type: 'turn_started', user_text: CONTINUATION }, 'r9')),
      background(ev({ type: 'text_delta', text: 'NO_' }, 'r9')),
    ]);
    const reply = state.items.at(-1)!;
    expect(silentReplies(state.items).has(reply.key)).toBe(true);
    state = fold(state, [
      background(ev({ type: 'text_delta', text: 'REPLY' }, 'r9')),
      background(ev({ type: 'message_appended', message: assistant('NO_REPLY', 3001) }, 'r9')),
      background(ev({ type: 'turn_finished', stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }, 'r9')),
    ]);
    expect(shape(state.items, silentReplies(state.items))).toEqual(['message:user:run it', `system:user:${CONTINUATION}`]);

    const told = fold(loaded([userTurn('run it', 1)]), [
      background(ev({ type: 'message_appended', message: systemEvent(CONTINUATION, 3000) }, 'r8')),
      background(ev({ type: 'turn_started', user_text: CONTINUATION }, 'r8')),
      background(ev({ type: 'text_delta', text: 'No tests failed.' }, 'r8')),
    ]);
    expect(silentReplies(told.items).size).toBe(0);
  });
});

describe('system events, as the user reads them', () => {
  it('shows the notices without their prefix and without the question for the model', () => {
    expect(systemView(`${NOTICE}\nSystem: Exec failed (c3, signal 9)\n\n${PROMPT}`)).toEqual({
      lines: ['Exec completed (a1b2, code 0) :: e2e-done', 'Exec failed (c3, signal 9)'],
      continued: true,
    });
    expect(systemView(LIMIT)).toEqual({ lines: [LIMIT], continued: false });
  });

  it('only a continuation notice starts a turn; a notice taken in by a running turn does not', () => {
    expect(startsTurn(systemEvent(CONTINUATION, 1))).toBe(true);
    expect(startsTurn(systemEvent(NOTICE, 1, false))).toBe(false);
  });

  it('knows the silent replies as the core does', () => {
    for (const silent of ['NO_REPLY', ' no_reply\n', 'HEARTBEAT_OK', '**NO_REPLY**', '`NO_REPLY`.', '']) {
      expect(isSilentReply(silent), silent).toBe(true);
    }
    for (const said of ['Tests passed; NO_REPLY needed', 'NO_REPLY but the build failed', 'Done.']) {
      expect(isSilentReply(said), said).toBe(false);
    }
    expect(maybeSilentReply('NO_RE')).toBe(true);
    expect(maybeSilentReply('**HEART')).toBe(true);
    expect(maybeSilentReply('No tests')).toBe(false);
  });
});
