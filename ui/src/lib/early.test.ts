// The early start (ipc.ts, startEarly): the subscription comes before the history is asked
// for, and the events from the subscription on are replayed to every handler that registers
// before the stores have all started.
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

it('subscribes before it reads the history, and replays the events since to each store that starts', async () => {
  const ipc = await import('./ipc');
  await ipc.startEarly();
  expect(tauri.calls).toEqual(['listen vigil://events', 'history']);

  // The chat, then a store with no history of its own (approvals, updates): both see e1,
  // which came before either listened.
  const chat: string[] = [];
  await ipc.onEvent((e) => chat.push(e.id));
  tauri.deliver?.({ payload: [event('e2')] });
  const other: string[] = [];
  await ipc.onEvent((e) => other.push(e.id));
  expect(chat).toEqual(['e1', 'e2']);
  expect(other).toEqual(['e1', 'e2']);

  const history = ipc.takeEarly();
  expect(history).not.toBeNull();
  expect((await history!).session_id).toBe('main');
  expect(ipc.takeEarly()).toBeNull();

  // Once every store has started nothing is held: later handlers get only what comes next.
  ipc.endEarly();
  tauri.deliver?.({ payload: [event('e3')] });
  const late: string[] = [];
  await ipc.onEvent((e) => late.push(e.id));
  tauri.deliver?.({ payload: [event('e4')] });
  expect(chat).toEqual(['e1', 'e2', 'e3', 'e4']);
  expect(late).toEqual(['e4']);
  expect(tauri.calls.filter((c) => c.startsWith('listen'))).toHaveLength(1);
});
