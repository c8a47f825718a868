// The early start (ipc.ts, startEarly): the subscription comes before the history is asked
// for, and the events from the subscription on are held for the chat, once.
import { beforeEach, expect, it, vi } from 'vitest';
import type { EventEnvelope } from './protocol';

const tauri = vi.hoisted(() => ({
  calls: [] as string[],
  deliver: null as ((e: { payload: EventEnvelope[] }) => void) | null,
}));

vi.mock('@tauri-apps/api/event', () => ({
  listen: async (name: string, cb: (e: { payload: EventEnvelope[] }) => void) => {
    tauri.calls.push(`listen ${name}`);
    tauri.deliver = cb;
    return () => {};
  },
}));

vi.mock('@tauri-apps/api/core', () => ({
  invoke: async (command: string) => {
    tauri.calls.push(command);
    // An event after the history was read, before any store listens.
    tauri.deliver?.({ payload: [event('e1')] });
    return { session_id: 'main', messages: [], warnings: [] };
  },
}));

function event(id: string): EventEnvelope {
  return { id, ts: 0, session_id: 'main', scope: 'session', source: 'user', run_id: null, type: 'turn_started' } as unknown as EventEnvelope;
}

beforeEach(() => {
  (window as unknown as Record<string, unknown>).__TAURI_INTERNALS__ = {};
});

it('subscribes before it reads the history, and holds the events since for the chat once', async () => {
  const ipc = await import('./ipc');
  await ipc.startEarly();
  expect(tauri.calls).toEqual(['listen vigil://events', 'history']);

  const seen: string[] = [];
  await ipc.onEvent((e) => seen.push(e.id));
  tauri.deliver?.({ payload: [event('e2')] });

  const early = ipc.takeEarly();
  expect(early).not.toBeNull();
  expect((await early!.history).session_id).toBe('main');
  expect(early!.events.map((e) => e.id)).toEqual(['e1', 'e2']);
  expect(seen).toEqual(['e2']);
  expect(ipc.takeEarly()).toBeNull();

  // Held no longer: later events reach the handlers only.
  tauri.deliver?.({ payload: [event('e3')] });
  expect(seen).toEqual(['e2', 'e3']);
  expect(tauri.calls.filter((c) => c.startsWith('listen'))).toHaveLength(1);
});
