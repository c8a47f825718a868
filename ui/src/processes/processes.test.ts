// The store with the IPC replaced: output kept per process whether or not a terminal shows
// it, replays joined with live output, commands started from the panel opened, keys in order.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { EventEnvelope, Op, ProcessSummary } from '../lib/protocol';
import { b64, exited, output, proc, started } from './testing';

const ipc = vi.hoisted(() => ({
  handler: null as ((e: EventEnvelope) => void) | null,
  listed: [] as ProcessSummary[],
  replay: null as null | { resolve: (b64: string) => void },
  submitted: [] as Op[],
  submitGate: null as null | Promise<void>,
}));

vi.mock('../lib/ipc', () => ({
  onEvent: async (h: (e: EventEnvelope) => void) => {
    ipc.handler = h;
    return () => (ipc.handler = null);
  },
  // As with no early read: the handler registers, then the list is read.
  startStore: async (_command: string, apply: (list: ProcessSummary[]) => void, h: (e: EventEnvelope) => void) => {
    ipc.handler = h;
    apply(ipc.listed);
    return { unlisten: () => (ipc.handler = null), error: null };
  },
  processOutput: (_id: string) => new Promise<string>((resolve) => (ipc.replay = { resolve })),
  submit: async (op: Op) => {
    ipc.submitted.push(op);
    await ipc.submitGate;
  },
  toCommandError: (e: unknown) => ({ code: 'unknown', message: String(e) }),
}));

const { ProcessesStore } = await import('./processes.svelte');

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** A sink that records what a terminal would show. */
function recorder() {
  const log: string[] = [];
  return { log, sink: { reset: (b: Uint8Array) => log.push(`reset:${text(b)}`), append: (b: Uint8Array) => log.push(text(b)) } };
}

async function startedStore() {
  const store = new ProcessesStore();
  await store.start();
  const send = (e: EventEnvelope) => ipc.handler?.(e);
  return { store, send };
}

beforeEach(() => {
  ipc.listed = [];
  ipc.replay = null;
  ipc.submitted = [];
  ipc.submitGate = null;
});

describe('the processes store', () => {
  it('keeps output while no terminal shows it, then replays it and streams the rest in order', async () => {
    const { store, send } = await startedStore();
    const p = proc('aaaaaaaa');
    send(started(p));
    send(output('aaaaaaaa', 'one\r\n'));
    send(output('aaaaaaaa', '\x1b[32mtwo\x1b[0m\r\n'));
    expect(text(store.output('aaaaaaaa'))).toBe('one\r\n\x1b[32mtwo\x1b[0m\r\n');
    const { log, sink } = recorder();
    const detach = store.attach('aaaaaaaa', sink);
    send(output('aaaaaaaa', 'three'));
    send(exited({ ...p, state: 'exited', exit_code: 0, ended_at: 2000 }));
    detach();
    send(output('aaaaaaaa', ' (after)'));
    // Seen from its start: no replay from the core is needed.
    expect(ipc.replay).toBeNull();
    expect(log).toEqual(['reset:one\r\n\x1b[32mtwo\x1b[0m\r\n', 'three']);
    expect(text(store.output('aaaaaaaa'))).toBe('one\r\n\x1b[32mtwo\x1b[0m\r\nthree (after)');
    expect(store.running).toBe(0);
    expect(store.list.map((x) => x.state)).toEqual(['exited']);
  });

  it('fetches the replay for a process that started before the window, joining what arrived meanwhile', async () => {
    ipc.listed = [proc('bbbbbbbb')];
    const { store, send } = await startedStore();
    expect(store.running).toBe(1);
    send(output('bbbbbbbb', 'C'));
    const { log, sink } = recorder();
    store.attach('bbbbbbbb', sink);
    expect(ipc.replay).not.toBeNull();
    send(output('bbbbbbbb', 'D'));
    send(output('bbbbbbbb', 'E'));
    // The core's copy was taken after D.
    ipc.replay?.resolve(b64('ABCD'));
    await vi.waitFor(() => expect(log).toEqual(['reset:ABCDE']));
    send(output('bbbbbbbb', 'F'));
    expect(log).toEqual(['reset:ABCDE', 'F']);
    expect(text(store.output('bbbbbbbb'))).toBe('ABCDEF');
  });

  it('counts running processes as they start and end', async () => {
    ipc.listed = [proc('aaaaaaaa'), proc('bbbbbbbb', { state: 'exited', exit_code: 1 })];
    const { store, send } = await startedStore();
    expect(store.running).toBe(1);
    send(started(proc('cccccccc', { started_at: 5000 })));
    expect(store.running).toBe(2);
    send(exited(proc('aaaaaaaa', { state: 'killed', signal: 'SIGTERM' })));
    expect(store.running).toBe(1);
    expect(store.list.map((p) => p.id)).toEqual(['cccccccc', 'bbbbbbbb', 'aaaaaaaa']);
  });

  it('opens on the newest running process when none is chosen', async () => {
    ipc.listed = [proc('aaaaaaaa', { started_at: 1 }), proc('bbbbbbbb', { started_at: 2, state: 'exited', exit_code: 0 })];
    const { store } = await startedStore();
    store.toggle();
    expect([store.open, store.selected]).toEqual([true, 'aaaaaaaa']);
    store.selected = 'bbbbbbbb';
    store.toggle();
    store.toggle();
    expect(store.selected).toBe('bbbbbbbb');
  });

  it('opens a command started from the panel once its process appears', async () => {
    const { store, send } = await startedStore();
    expect(await store.run('  npm test ')).toBe(true);
    expect(ipc.submitted).toEqual([{ type: 'start_process', command: 'npm test' }]);
    expect(store.starting).toBe('npm test');
    send(started(proc('aaaaaaaa', { owner: 'main', command: 'npm test' })));
    expect(store.selected).toBeNull();
    send(started(proc('bbbbbbbb', { owner: 'user', command: 'npm test' })));
    expect([store.starting, store.selected, store.open]).toEqual([null, 'bbbbbbbb', true]);
  });

  it('sends keys one request at a time, joining those typed meanwhile', async () => {
    const { store } = await startedStore();
    let release = () => {};
    ipc.submitGate = new Promise<void>((r) => (release = r));
    store.input('aaaaaaaa', 'l');
    store.input('aaaaaaaa', 's');
    store.input('aaaaaaaa', '\r');
    expect(ipc.submitted).toEqual([{ type: 'process_input', process_id: 'aaaaaaaa', data: 'l' }]);
    ipc.submitGate = null;
    release();
    await vi.waitFor(() => expect(ipc.submitted).toHaveLength(2));
    expect(ipc.submitted[1]).toEqual({ type: 'process_input', process_id: 'aaaaaaaa', data: 's\r' });
  });
});
