// The Routines pane while HEARTBEAT.md is held for the user's Trust (issue 30): the core
// refuses every change to the file until then, so New routine, a removed routine's Restore
// and Delete, and Save checks are disabled with the reason, and enabled again once trusted.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, tick, unmount } from 'svelte';
import type { RoutineView, RoutinesView } from '../lib/protocol';
import { routineView } from './testing';

const ipc = vi.hoisted(() => ({ held: null as string | null }));

const routine = (id: string, removed_at: number | null): RoutineView =>
  routineView({ id, title: `Routine ${id}`, schedule: '1d', schedule_description: 'every day', removed_at });

vi.mock('../lib/ipc', () => ({
  listRoutines: async (): Promise<RoutinesView> =>
    ({
      status: 'ok',
      error: null,
      routines: [routine('water', null), routine('old', 1_000)],
      held: ipc.held ?? undefined,
    }) as unknown as RoutinesView,
  heartbeatChecks: async () => ({ text: '# Checks\n', effectively_empty: true, path: '/ws/HEARTBEAT.md' }),
  routineHistory: async () => [],
  toCommandError: (e: unknown) => ({ code: 'unknown', message: String(e) }),
}));

const { RoutinesStore } = await import('./routines.svelte');
const RoutinesPane = (await import('./RoutinesPane.svelte')).default;

let mounted: Record<string, unknown>[] = [];
afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

async function open(held: string | null): Promise<(id: string) => HTMLButtonElement> {
  ipc.held = held;
  const store = new RoutinesStore();
  const heartbeat = { check: { phase: 'idle' }, checkNow: async () => {} };
  mounted.push(mount(RoutinesPane, { target: document.body, props: { store, heartbeat: heartbeat as never, onClose: () => {} } }));
  for (let i = 0; i < 5; i++) {
    await tick();
    await Promise.resolve();
  }
  flushSync();
  const text = document.querySelector<HTMLTextAreaElement>('[data-testid="checks-text"]')!;
  text.value = '# Checks\n- Is the disk full?\n';
  text.dispatchEvent(new Event('input'));
  flushSync();
  return (id) => document.querySelector<HTMLButtonElement>(`[data-testid="${id}"]`)!;
}

const CHANGES = ['routine-new', 'removed-restore', 'removed-delete', 'checks-save', 'routine-run-now', 'routine-edit'];

describe('the Routines pane', () => {
  it('while HEARTBEAT.md is held offers no change the core would refuse, and says why', async () => {
    const button = await open('HEARTBEAT.md was replaced while a sandboxed command was running');
    for (const id of CHANGES) {
      expect(button(id).disabled, id).toBe(true);
      expect(button(id).title, id).toContain('trust HEARTBEAT.md');
    }
  });

  it('with the file trusted offers them all', async () => {
    const button = await open(null);
    for (const id of CHANGES) expect(button(id).disabled, id).toBe(false);
  });
});
