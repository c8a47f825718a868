// The early start (ipc.ts, startEarly): the subscriptions come before anything is read, every
// store's first read is asked for at once, the events from the subscription on are replayed
// to every handler that registers before the stores have all started, and a store applies its
// early answer before the events that may be newer than it.
import { beforeEach, expect, it, vi } from 'vitest';
import type { EventEnvelope, SessionSummary } from './protocol';

type Deliver = (e: { payload: unknown }) => void;

const tauri = vi.hoisted(() => ({
  calls: [] as string[],
  listeners: new Map<string, Deliver>(),
  /** Run as a command is asked for, before it answers. */
  onInvoke: (_command: string): void => {},
  /** Run as a subscription is made. */
  onListen: (_name: string): void => {},
  failing: new Set<string>(),
}));

vi.mock('@tauri-apps/api/event', () => ({
  listen: async (name: string, cb: Deliver) => {
    tauri.calls.push(`listen ${name}`);
    tauri.listeners.set(name, cb);
    tauri.onListen(name);
    return () => tauri.listeners.delete(name);
  },
}));

vi.mock('@tauri-apps/api/core', () => ({
  invoke: async (command: string) => {
    tauri.calls.push(command);
    tauri.onInvoke(command);
    if (tauri.failing.has(command)) throw { code: 'io', message: `${command} failed` };
    if (command === 'history') return { session_id: 'main', messages: [], warnings: [] };
    if (command === 'list_sessions') return [session('from the read')];
    return {};
  },
}));

function event(id: string, extra: Record<string, unknown> = { type: 'turn_started' }): EventEnvelope {
  return { id, ts: 0, session_id: 'main', scope: 'session', source: 'user', run_id: null, ...extra } as unknown as EventEnvelope;
}

function session(title: string): SessionSummary {
  return { id: 'main', title } as unknown as SessionSummary;
}

function deliver(...events: EventEnvelope[]): void {
  tauri.listeners.get('vigil://events')?.({ payload: events });
}

beforeEach(() => {
  vi.resetModules();
  tauri.calls = [];
  tauri.listeners.clear();
  tauri.onInvoke = () => {};
  tauri.onListen = () => {};
  tauri.failing.clear();
  (window as unknown as Record<string, unknown>).__TAURI_INTERNALS__ = {};
});

it('subscribes before it reads, and replays the events since to each store that starts', async () => {
  // An event after the history was read, before any store listens.
  tauri.onInvoke = (command) => command === 'history' && deliver(event('e1'));
  const ipc = await import('./ipc');
  await ipc.startEarly();
  const reads = tauri.calls.filter((c) => !c.startsWith('listen'));
  expect(tauri.calls.indexOf('listen vigil://events')).toBeLessThan(tauri.calls.indexOf('history'));
  expect(reads).toEqual(ipc.STARTUP_READS);
  expect(ipc.STARTUP_READS).toHaveLength(7);

  // The chat, then a store with no read of its own (approvals, updates): both see e1,
  // which came before either listened.
  const chat: string[] = [];
  await ipc.onEvent((e) => chat.push(e.id));
  deliver(event('e2'));
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
  deliver(event('e3'));
  const late: string[] = [];
  await ipc.onEvent((e) => late.push(e.id));
  deliver(event('e4'));
  expect(chat).toEqual(['e1', 'e2', 'e3', 'e4']);
  expect(late).toEqual(['e4']);
  expect(tauri.calls.filter((c) => c === 'listen vigil://events')).toHaveLength(1);
});

it('gives a store its early answer first, then only the events since it was asked', async () => {
  // Before the conversations are asked for (their answer says it), and after (it may not).
  tauri.onListen = (name) => {
    if (name === 'vigil://events') deliver(event('before', { type: 'sessions_changed', sessions: [session('older')] }));
  };
  tauri.onInvoke = (command) => {
    if (command === 'list_sessions') deliver(event('after', { type: 'sessions_changed', sessions: [session('newest')] }));
  };
  const ipc = await import('./ipc');
  await ipc.startEarly();

  let title = '';
  const seen: string[] = [];
  const { error } = await ipc.startStore(
    'list_sessions',
    (list) => {
      seen.push('answer');
      title = list[0].title;
    },
    (e) => {
      seen.push(e.id);
      if (e.type === 'sessions_changed') title = e.sessions[0].title;
    },
  );
  // The answer does not land on top of the newer event, and the older one is not replayed.
  expect(error).toBeNull();
  expect(seen).toEqual(['answer', 'after']);
  expect(title).toBe('newest');
  // Taken once: a later start reads again, after it listens.
  const again = await ipc.startStore('list_sessions', () => seen.push('read again'), () => {});
  expect(again.error).toBeNull();
  expect(seen.at(-1)).toBe('read again');
  expect(tauri.calls.filter((c) => c === 'list_sessions')).toHaveLength(2);
});

it('a failed early read is reported and the store still gets its events', async () => {
  tauri.failing.add('list_processes');
  const ipc = await import('./ipc');
  await ipc.startEarly();
  const applied: unknown[] = [];
  const seen: string[] = [];
  const { error } = await ipc.startStore('list_processes', (list) => applied.push(list), (e) => seen.push(e.id));
  expect(error).toEqual({ code: 'io', message: 'list_processes failed' });
  expect(applied).toEqual([]);
  deliver(event('e1'));
  expect(seen).toEqual(['e1']);
});

it('keeps a notification clicked before the window listens and hands it over', async () => {
  const ipc = await import('./ipc');
  await ipc.startEarly();
  expect(tauri.calls).toContain('listen vigil://focus');
  tauri.listeners.get('vigil://focus')?.({ payload: { event_id: 'u1', process_id: null } });
  const targets: unknown[] = [];
  await ipc.onFocus((t) => targets.push(t));
  tauri.listeners.get('vigil://focus')?.({ payload: { event_id: null, process_id: 'p1' } });
  expect(targets).toEqual([
    { event_id: 'u1', process_id: null },
    { event_id: null, process_id: 'p1' },
  ]);
  expect(tauri.calls.filter((c) => c === 'listen vigil://focus')).toHaveLength(1);
});
