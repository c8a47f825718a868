// The routine editor offers what happens to times missed while the computer slept or Vigil
// was closed (catch-up): an existing routine's policy is checked, and the one the user picks
// is what is saved.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, tick, unmount } from 'svelte';
import type { RoutineDraft, RoutineView } from '../lib/protocol';
import RoutineEditor from './RoutineEditor.svelte';
import { routineView } from './testing';
import type { RoutinesStore } from './routines.svelte';

vi.mock('../lib/ipc', () => ({
  previewSchedule: () => Promise.resolve({ description: 'every day at 09:00, UTC', timezone: 'UTC', next_runs: [] }),
  toCommandError: (e: unknown) => e,
}));

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

const existing: RoutineView = routineView({
  id: 'digest',
  title: 'Daily digest',
  description: 'Summarise the day.',
  next_run_at: 0,
  catch_up: 'all',
});

function show(routine: RoutineView | null, save: (id: string | null, d: RoutineDraft) => Promise<string[]>): HTMLElement {
  const target = document.createElement('div');
  document.body.append(target);
  const store = { save } as unknown as RoutinesStore;
  mounted.push(mount(RoutineEditor, { target, props: { store, routine, onDone: () => {} } }));
  flushSync();
  return target;
}

const radio = (root: HTMLElement, value: string) =>
  root.querySelector<HTMLInputElement>(`[data-testid="routine-catch-up-${value}"]`) as HTMLInputElement;

async function submit(root: HTMLElement): Promise<void> {
  root.querySelector<HTMLFormElement>('form')?.requestSubmit();
  for (let i = 0; i < 5; i++) await tick();
}

describe('the catch-up policy in the editor', () => {
  it('shows the routine’s policy and saves the one picked', async () => {
    const save = vi.fn((_id: string | null, _d: RoutineDraft) => Promise.resolve([] as string[]));
    const root = show(existing, save);
    expect(['once', 'skip', 'all'].map((v) => radio(root, v).checked)).toEqual([false, false, true]);
    radio(root, 'skip').click();
    flushSync();
    await submit(root);
    expect(save).toHaveBeenCalledTimes(1);
    expect(save.mock.calls[0][0]).toBe('digest');
    expect(save.mock.calls[0][1].catch_up).toBe('skip');
  });

  it('a new routine starts with “run it once”', () => {
    const root = show(null, () => Promise.resolve([]));
    expect(radio(root, 'once').checked).toBe(true);
    expect(root.querySelector('[data-testid="routine-catch-up"]')?.textContent).toContain(
      'If its time passes while the computer sleeps or Vigil is closed',
    );
  });
});
