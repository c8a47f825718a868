// The window's one `ProcessesStore`, for components far from `App.svelte` (the chat's
// `exec` cards link to their process) without threading it through every view between.

import { getContext, setContext } from 'svelte';
import type { ProcessesStore } from './processes.svelte';

const KEY = Symbol('processes');

export function provideProcesses(store: ProcessesStore): void {
  setContext(KEY, store);
}

/** The store, or undefined where none was provided (a component rendered on its own). */
export function useProcesses(): ProcessesStore | undefined {
  return getContext<ProcessesStore | undefined>(KEY);
}
