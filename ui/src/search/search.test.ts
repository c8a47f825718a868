// The sidebar's search: typing sends one search once the keys stop, only the answer to what
// the box says now is shown, matched words are marked, and a result opens its message.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import type { EventEnvelope, HistoryHit, Op } from '../lib/protocol';

const backend = vi.hoisted(() => ({
  ops: [] as Op[],
  handler: null as ((e: EventEnvelope) => void) | null,
}));

vi.mock('../lib/ipc', () => ({
  submit: async (op: Op) => {
    backend.ops.push(op);
  },
  onEvent: async (handler: (e: EventEnvelope) => void) => {
    backend.handler = handler;
    return () => {};
  },
  toCommandError: (e: unknown) => e,
}));

const { SearchStore, SEARCH_DELAY_MS } = await import('./search.svelte');
const SearchBox = (await import('./SearchBox.svelte')).default;

const hit: HistoryHit = {
  session_id: 'chat_a',
  title: 'Disk trouble',
  kind: 'conversation',
  message_id: 'm1',
  role: 'assistant',
  ts: 1_795_860_000_000,
  snippet: [
    { text: 'root is at 91% ', matched: false },
    { text: 'full', matched: true },
  ],
};

function results(query: string, hits: HistoryHit[]): void {
  backend.handler!({
    id: 'e' + Math.random(),
    ts: 0,
    session_id: null,
    scope: 'app',
    source: 'system',
    run_id: null,
    type: 'history_results',
    query,
    hits,
  } as EventEnvelope);
  flushSync();
}

let mounted: Record<string, unknown> | null = null;
beforeEach(() => {
  backend.ops = [];
  vi.useFakeTimers();
});
afterEach(() => {
  if (mounted) unmount(mounted);
  mounted = null;
  document.body.innerHTML = '';
  vi.useRealTimers();
});

describe('searching all conversations', () => {
  it('searches once typing pauses, shows only the current answer, and opens the chosen message', async () => {
    const store = new SearchStore();
    await store.start();
    const opened: HistoryHit[] = [];
    const target = document.createElement('div');
    document.body.append(target);
    mounted = mount(SearchBox, { target, props: { store, onOpen: (h: HistoryHit) => opened.push(h) } });
    flushSync();
    const input = target.querySelector<HTMLInputElement>('[data-testid="history-search"]')!;
    for (const typed of ['f', 'fu', 'full']) {
      input.value = typed;
      input.dispatchEvent(new Event('input', { bubbles: true }));
    }
    flushSync();
    expect(target.textContent).toContain('Searching…');
    vi.advanceTimersByTime(SEARCH_DELAY_MS);
    expect(backend.ops).toEqual([{ type: 'search_history', query: 'full' }]);
    // A late answer to an older query is not shown.
    results('fu', [{ ...hit, message_id: 'old' }]);
    expect(target.querySelector('[data-testid="history-hit"]')).toBeNull();
    results('full', [hit]);
    const shown = target.querySelector<HTMLButtonElement>('[data-testid="history-hit"]')!;
    expect(shown.textContent).toContain('Disk trouble');
    expect([...shown.querySelectorAll('mark')].map((m) => m.textContent)).toEqual(['full']);
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    shown.click();
    expect(opened).toEqual([hit, hit]);
    // Escape empties the box and the results.
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', cancelable: true, bubbles: true }));
    flushSync();
    expect(store.query).toBe('');
    expect(target.querySelector('[data-testid="history-results"]')).toBeNull();
  });
});
