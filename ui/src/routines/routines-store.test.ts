// A routine made in the editor records the conversation open in the window (its inline
// runs are turns there); changing a routine never moves it to another conversation.
import { describe, expect, it, vi } from 'vitest';
import type { RoutineDraft } from '../lib/protocol';

const sent: { added: RoutineDraft[]; updated: RoutineDraft[] } = { added: [], updated: [] };

vi.mock('../lib/ipc', () => ({
  addRoutine: (draft: RoutineDraft) => {
    sent.added.push(draft);
    return Promise.resolve({ warnings: [] });
  },
  updateRoutine: (_id: string, draft: RoutineDraft) => {
    sent.updated.push(draft);
    return Promise.resolve({});
  },
  listRoutines: () => Promise.resolve({ status: 'ok', error: null, routines: [] }),
  toCommandError: (e: unknown) => e,
}));

const { RoutinesStore } = await import('./routines.svelte');

describe('a routine saved from the editor', () => {
  it('carries the open conversation when it is made, and none when it is changed', async () => {
    let open = 'chat-42';
    const store = new RoutinesStore(() => open);
    await store.save(null, { title: 'Inbox digest', execution_mode: 'inline', trigger: { kind: 'file', paths: ['inbox/'] } });
    expect(sent.added.at(-1)?.conversation_id).toBe('chat-42');
    open = 'main';
    await store.save('inbox_digest', { title: 'Inbox digest, renamed' });
    expect(sent.updated.at(-1)?.conversation_id).toBeUndefined();
  });
});
