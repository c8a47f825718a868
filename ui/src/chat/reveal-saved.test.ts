// A search result for a message saved while its conversation was open: that message came as
// an event, which names no id, so the conversation is loaded again and opens at it by id.
import { describe, expect, it, vi } from 'vitest';
import type { EventEnvelope, History } from '../lib/protocol';
import { messageRow } from './reveal';
import { ev, msg, saved } from './testing';

const backend = vi.hoisted(() => ({
  handler: null as ((e: EventEnvelope) => void) | null,
  histories: [] as History[],
  loads: 0,
}));

vi.mock('../lib/ipc', () => ({
  PRIMARY_SESSION: 'main',
  onEvent: async (handler: (e: EventEnvelope) => void) => {
    backend.handler = handler;
    return () => {};
  },
  takeEarly: () => null,
  history: async () => backend.histories[Math.min(backend.loads++, backend.histories.length - 1)],
  submit: async () => {},
  toCommandError: (e: unknown) => e,
}));

const { ChatStore } = await import('./chat.svelte');

const first = [msg('user', 'How full is the disk?', 1_000), msg('assistant', 'Root is at 91%.', 1_001)];
const live = msg('assistant', 'The tangerine volume is at 40%.', 1_002);

describe('a search result saved after its conversation was loaded', () => {
  it('loads the conversation again and opens at that message, shown once', async () => {
    backend.histories = [
      { session_id: 'main', messages: saved(first), warnings: [] },
      { session_id: 'main', messages: [...saved(first), { id: 'mlive', ...live }], warnings: [] },
    ];
    const chat = new ChatStore();
    await chat.start();
    backend.handler!(ev({ type: 'message_appended', message: live }, null));
    chat.flush();
    expect(chat.state.items.map((i) => i.text)).toContain('The tangerine volume is at 40%.');
    expect(backend.loads).toBe(1);

    await chat.revealSaved('mlive');
    expect(backend.loads).toBe(2);
    expect(chat.loaded).toBe(true);
    const at = messageRow(chat.state.items, chat.state.savedRows, new Set(), chat.reveal as { messageId: string });
    expect(chat.state.items[at].text).toBe('The tangerine volume is at 40%.');
    expect(chat.state.items.map((i) => i.text).filter((t) => t.includes('tangerine'))).toHaveLength(1);

    // A message the loaded conversation already holds: no second load.
    await chat.revealSaved('m0');
    expect(backend.loads).toBe(2);
    expect(chat.reveal).toEqual({ messageId: 'm0' });
  });
});
