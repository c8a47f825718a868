// Sending a message with images: each is staged as a file under a generated name, and the
// op names it as the user knows it, so a refusal says "cut-short.png", not a UUID.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Op } from '../lib/protocol';

const backend = vi.hoisted(() => ({ staged: 0, ops: [] as Op[] }));

vi.mock('../lib/ipc', () => ({
  PRIMARY_SESSION: 'main',
  stageAttachment: async () => `/data/attachments/staged-${++backend.staged}.png`,
  submit: async (op: Op) => {
    backend.ops.push(op);
  },
  toCommandError: (e: unknown) => e,
}));

const { ChatStore } = await import('./chat.svelte');

/** A File whose bytes jsdom can hand back (its Blob lacks `arrayBuffer`). */
function file(name: string): File {
  const f = new File([new Uint8Array([137, 80, 78, 71])], name, { type: 'image/png' });
  Object.defineProperty(f, 'arrayBuffer', { value: async () => new Uint8Array([137, 80, 78, 71]).buffer });
  return f;
}

describe('sending images', () => {
  beforeEach(() => {
    backend.staged = 0;
    backend.ops = [];
  });

  it("names each staged image by the file's own name", async () => {
    const store = new ChatStore();
    expect(await store.send('what is this?', [file('cut-short.png'), file('')])).toBe(true);
    expect(backend.ops).toEqual([
      {
        type: 'user_message',
        text: 'what is this?',
        session_id: 'main',
        attachments: [{ path: '/data/attachments/staged-1.png', name: 'cut-short.png' }, { path: '/data/attachments/staged-2.png' }],
      },
    ]);
  });
});
