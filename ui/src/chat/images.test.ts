// Images in the chat's state: a sent message carries its thumbnails, a tool's images land on
// its card, and a message whose images the core refused leaves the list (it was not sent).
import { describe, expect, it } from 'vitest';
import type { Message } from '../lib/protocol';
import { imagesOf, resultImages } from './images';
import { addPendingUser, applyEvent } from './state';
import { ev, fold, loaded, msg, userTurn } from './testing';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);

function withImage(message: Message, sha256: string, mime = 'image/png'): Message {
  return { ...message, content: [...message.content, { type: 'image', sha256, mime }] };
}

describe('images in the chat', () => {
  it('a sent message shows its images; the pending one it replaces counts them', () => {
    let [s] = addPendingUser(loaded(), 'what is this?', 1, false, 1);
    expect(s.items[0].attaching).toBe(1);
    s = applyEvent(s, ev({ type: 'message_appended', message: withImage(userTurn('what is this?', 7), A) }));
    expect(s.items).toHaveLength(1);
    expect(s.items[0].pending).toBe(false);
    expect(s.items[0].images).toEqual([{ sha256: A, mime: 'image/png' }]);
    expect(s.items[0].attaching).toBeUndefined();
  });

  it('an image-only message (no text) matches its pending item too', () => {
    let [s] = addPendingUser(loaded(), '', 1, false, 2);
    s = applyEvent(s, ev({ type: 'message_appended', message: withImage(withImage(userTurn('', 7), A), B, 'image/jpeg') }));
    expect(s.items.map((i) => [i.pending, i.images?.length])).toEqual([[false, 2]]);
  });

  it("a tool's images land on its card, each result its own", () => {
    const call = (id: string) => ({ type: 'tool_use' as const, id, name: 'read', input: { path: `${id}.png` } });
    const results: Message = {
      role: 'tool_result',
      content: [
        { type: 'tool_result', tool_use_id: 'c1', content: 'c1.png is a PNG image', is_error: false },
        { type: 'image', sha256: A, mime: 'image/png' },
        { type: 'tool_result', tool_use_id: 'c2', content: 'no image here', is_error: false },
      ],
      ts: 3,
    };
    const s = loaded([userTurn('look', 1), { role: 'assistant', content: [call('c1'), call('c2')], ts: 2 }, results]);
    const cards = s.items[1].tools;
    expect(cards.map((c) => [c.id, c.status, c.images])).toEqual([
      ['c1', 'done', [{ sha256: A, mime: 'image/png' }]],
      ['c2', 'done', undefined],
    ]);
    expect(resultImages(results.content).get('c1')).toEqual([{ sha256: A, mime: 'image/png' }]);
    expect(imagesOf(results.content)).toHaveLength(1);
  });

  it('a message whose images the core refused is taken off the list, with the error', () => {
    let [s] = addPendingUser(loaded([msg('user', 'earlier', 1)]), 'see this', 2, false, 1);
    s = fold(s, [ev({ type: 'error', kind: 'attachment', message: 'Cannot send this image: shot.png could not be read as a PNG image.' }, null)]);
    expect(s.items.map((i) => i.text)).toEqual(['earlier']);
    expect(s.banner).toEqual({ kind: 'attachment', message: 'Cannot send this image: shot.png could not be read as a PNG image.' });
  });

  it('another error leaves a pending message with images alone', () => {
    let [s] = addPendingUser(loaded(), 'see this', 2, false, 1);
    s = fold(s, [ev({ type: 'error', kind: 'storage', message: 'disk full' }, null)]);
    expect(s.items).toHaveLength(1);
  });
});
