import { describe, expect, it } from 'vitest';
import type { Event } from '../lib/protocol';
import { addPendingUser, applyEvent, dismissBanner, isBusy, NOT_THE_CHATS, retryText, type ChatState } from './state';
import { ev, fold, loaded, msg } from './testing';

/** What the view shows, without keys and timestamps. */
function shown(state: ChatState) {
  return state.items.map((i) => ({
    role: i.role,
    text: i.text,
    streaming: i.streaming,
    stopped: i.stopped,
    pending: i.pending,
  }));
}

describe('chat reducer', () => {
  it('assembles streamed deltas into one in-progress assistant message', () => {
    const s = fold(loaded(), [
      ev({ type: 'message_appended', message: msg('user', 'hi', 5) }),
      ev({ type: 'turn_started', user_text: 'hi' }),
      ev({ type: 'reasoning_delta', text: 'Let me ' }),
      ev({ type: 'reasoning_delta', text: 'think.' }),
      ev({ type: 'text_delta', text: 'Hel' }),
      ev({ type: 'text_delta', text: 'lo **there**' }),
    ]);
    expect(shown(s)).toEqual([
      { role: 'user', text: 'hi', streaming: false, stopped: false, pending: false },
      { role: 'assistant', text: 'Hello **there**', streaming: true, stopped: false, pending: false },
    ]);
    expect(s.items[1].thinking).toBe('Let me think.');
    expect(s.phase).toBe('streaming');
    expect(isBusy(s)).toBe(true);
  });

  it('shows each user message once: pending, then appended, then turn_started', () => {
    let [s] = addPendingUser(loaded(), 'hello', 1);
    s = fold(s, [
      ev({ type: 'message_appended', message: msg('user', 'hello', 7) }),
      ev({ type: 'turn_started', user_text: 'hello' }),
    ]);
    expect(shown(s)).toEqual([
      { role: 'user', text: 'hello', streaming: false, stopped: false, pending: false },
      { role: 'assistant', text: '', streaming: true, stopped: false, pending: false },
    ]);
  });

  it('adds the user message on turn_started when it was not shown yet', () => {
    const s = fold(loaded(), [ev({ type: 'turn_started', user_text: 'from elsewhere' })]);
    expect(shown(s).map((i) => [i.role, i.text])).toEqual([
      ['user', 'from elsewhere'],
      ['assistant', ''],
    ]);
  });

  it('replaces the streamed message with the saved one, keeping its key, without duplicates', () => {
    const saved = msg('assistant', 'Hello there', 50, { model: 'm', stop_reason: 'end_turn' });
    let s = fold(loaded(), [
      ev({ type: 'message_appended', message: msg('user', 'hi', 5) }),
      ev({ type: 'turn_started', user_text: 'hi' }),
      ev({ type: 'text_delta', text: 'Hello there' }),
    ]);
    const key = s.items[1].key;
    const appended = ev({ type: 'message_appended', message: saved });
    s = fold(s, [appended, appended, ev({ type: 'turn_finished', stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 2 } })]);
    expect(shown(s)).toEqual([
      { role: 'user', text: 'hi', streaming: false, stopped: false, pending: false },
      { role: 'assistant', text: 'Hello there', streaming: false, stopped: false, pending: false },
    ]);
    expect(s.items[1].key).toBe(key);
    expect(s.items[1].model).toBe('m');
    expect(s.phase).toBe('idle');

    // The same saved message arriving again under a new event id (a replay) is still one message.
    s = applyEvent(s, ev({ type: 'message_appended', message: saved }));
    expect(s.items).toHaveLength(2);
  });

  it('does not duplicate messages already loaded from history', () => {
    const user = msg('user', 'hi', 5);
    const s = fold(loaded([user]), [ev({ type: 'message_appended', message: user })]);
    expect(s.items).toHaveLength(1);
  });

  it('marks a cancelled turn stopped, with or without a saved partial reply', () => {
    const finished = (runId: string) =>
      ev({ type: 'turn_finished', stop_reason: 'cancelled', usage: { input_tokens: 0, output_tokens: 0 } }, runId);

    const partial = msg('assistant', 'Half', 9, { stop_reason: 'cancelled' });
    let s = fold(loaded(), [
      ev({ type: 'turn_started', user_text: 'a' }, 'r1'),
      ev({ type: 'text_delta', text: 'Half' }, 'r1'),
      ev({ type: 'message_appended', message: partial }, 'r1'),
      finished('r1'),
    ]);
    expect(shown(s)[1]).toEqual({ role: 'assistant', text: 'Half', streaming: false, stopped: true, pending: false });
    expect(s.phase).toBe('idle');

    s = fold(s, [ev({ type: 'turn_started', user_text: 'b' }, 'r2'), finished('r2')]);
    expect(shown(s)[3]).toEqual({ role: 'assistant', text: '', streaming: false, stopped: true, pending: false });
  });

  it('drops an empty in-progress message when a turn fails, and shows the error banner', () => {
    let s = fold(loaded(), [
      ev({ type: 'turn_started', user_text: 'hi' }),
      ev({ type: 'error', kind: 'auth', message: 'The API key was rejected.' }),
      ev({ type: 'turn_finished', stop_reason: 'error', usage: { input_tokens: 0, output_tokens: 0 } }),
    ]);
    expect(s.banner).toEqual({ kind: 'auth', message: 'The API key was rejected.' });
    expect(shown(s).map((i) => i.role)).toEqual(['user']);
    expect(isBusy(s)).toBe(false);
    s = dismissBanner(s);
    expect(s.banner).toBeNull();
  });

  it('drops the empty reply as the error arrives, before the turn finishes', () => {
    const s = fold(loaded(), [
      ev({ type: 'turn_started', user_text: 'hi' }),
      ev({ type: 'error', kind: 'auth', message: 'The API key was rejected.' }),
    ]);
    expect(s.banner?.kind).toBe('auth');
    expect(shown(s).map((i) => [i.role, i.text])).toEqual([['user', 'hi']]);
  });

  it('keeps a reply that has text when an error arrives', () => {
    const s = fold(loaded(), [
      ev({ type: 'turn_started', user_text: 'hi' }),
      ev({ type: 'text_delta', text: 'Half' }),
      ev({ type: 'error', kind: 'network', message: 'The connection dropped.' }),
    ]);
    expect(shown(s).map((i) => [i.role, i.text])).toEqual([['user', 'hi'], ['assistant', 'Half']]);
  });

  it('shows an error with no turn (an app-level problem) too', () => {
    const s = applyEvent(loaded(), ev({ type: 'error', kind: 'config', message: 'No provider.' }, null, null));
    expect(s.banner?.message).toBe('No provider.');
  });

  it('notes retries and clears the note when text flows again', () => {
    let s = fold(loaded(), [
      ev({ type: 'turn_started', user_text: 'hi' }),
      ev({ type: 'retrying', attempt: 1, delay_ms: 2000, reason: '529' }),
    ]);
    expect(s.retry).toEqual({ attempt: 1, delayMs: 2000, reason: '529' });
    expect(retryText(s.retry!)).toBe('Provider busy — retrying in 2 s (attempt 1)');
    expect(retryText({ attempt: 2, delayMs: 1500, reason: '' })).toBe('Provider busy — retrying in 1.5 s (attempt 2)');
    s = applyEvent(s, ev({ type: 'text_delta', text: 'ok' }));
    expect(s.retry).toBeNull();
  });

  it('ignores repeated event ids and other sessions', () => {
    const delta = ev({ type: 'text_delta', text: 'x' });
    let s = fold(loaded(), [ev({ type: 'turn_started', user_text: 'hi' }), delta, delta]);
    expect(s.items[1].text).toBe('x');
    s = applyEvent(s, ev({ type: 'text_delta', text: 'other' }, 'r9', 'job-1'));
    expect(s.items[1].text).toBe('x');
  });

  it("leaves the state the very same object for other views' events", () => {
    const s = fold(loaded(), [ev({ type: 'turn_started', user_text: 'hi' }), ev({ type: 'text_delta', text: 'x' })]);
    // Only the type is read, so the rest of each event is left out.
    for (const type of NOT_THE_CHATS) expect(applyEvent(s, ev({ type } as Event)), type).toBe(s);
    // The one that comes by the thousand under load.
    expect(NOT_THE_CHATS.has('process_output')).toBe(true);
    // The chat's own events are folded in, even one that changes nothing shown (its id is kept).
    expect(applyEvent(s, ev({ type: 'queue_consumed', count: 0 }))).not.toBe(s);
  });

  it('keeps a message sent mid-turn below the running reply', () => {
    let s = fold(loaded(), [
      ev({ type: 'message_appended', message: msg('user', 'first', 1) }, 'r1'),
      ev({ type: 'turn_started', user_text: 'first' }, 'r1'),
    ]);
    [s] = addPendingUser(s, 'second', 2);
    s = fold(s, [
      ev({ type: 'text_delta', text: 'reply' }, 'r1'),
      ev({ type: 'message_appended', message: msg('assistant', 'reply', 3) }, 'r1'),
      ev({ type: 'turn_finished', stop_reason: 'end_turn', usage: { input_tokens: 0, output_tokens: 0 } }, 'r1'),
      ev({ type: 'message_appended', message: msg('user', 'second', 4) }, 'r2'),
      ev({ type: 'turn_started', user_text: 'second' }, 'r2'),
    ]);
    expect(shown(s).map((i) => [i.role, i.text, i.pending])).toEqual([
      ['user', 'first', false],
      ['assistant', 'reply', false],
      ['user', 'second', false],
      ['assistant', '', false],
    ]);
  });

  it('marks cancelled messages from history as stopped', () => {
    const s = loaded([msg('user', 'q', 1), msg('assistant', 'part', 2, { stop_reason: 'cancelled' })]);
    expect(s.items[1].stopped).toBe(true);
  });
});
