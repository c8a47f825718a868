// The sidebar's relative times ("5 min") in an idle window: brought up to date on the
// minute by one timer for the page, by none while the window is hidden in the tray, and at
// once when it shows again.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import type { SessionSummary } from '../lib/protocol';
import Sidebar from './Sidebar.svelte';
import type { SessionsStore } from './sessions.svelte';

const UPDATED = Date.parse('2026-11-24T10:00:00Z');
let mounted: Record<string, unknown>[] = [];

function setVisibility(state: DocumentVisibilityState): void {
  Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => state });
  document.dispatchEvent(new Event('visibilitychange'));
  flushSync();
}

beforeEach(() => {
  vi.useFakeTimers({ now: UPDATED + 30_000 });
});

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
  setVisibility('visible');
  vi.useRealTimers();
});

function show(): HTMLElement {
  const session: SessionSummary = { id: 'main', title: 'Trip planning', created_at: 0, updated_at: UPDATED, continuations: 0 };
  const store = {
    list: [session],
    active: 'main',
    running: new Set<string>(),
    unattended: new Set<string>(),
    error: null,
  } as unknown as SessionsStore;
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(
    mount(Sidebar, { target, props: { store, waiting: new Set<string>(), unread: new Map<string, number>(), overlay: false, onClose: () => {} } }),
  );
  flushSync();
  return target;
}

const shownAge = (root: HTMLElement) => root.querySelector('[data-testid="sidebar"] li')!.textContent!;
const minutes = () => `${Math.floor((Date.now() - UPDATED) / 60_000)} min`;

describe('relative times in an idle window', () => {
  it('wake the page at most once a minute, and keep "N min" true', () => {
    const root = show();
    expect(shownAge(root)).toContain('just now');
    const start = Date.now();
    let wakes = 0;
    while (vi.getTimerCount() > 0) {
      vi.advanceTimersToNextTimer();
      if (Date.now() - start > 10 * 60_000) break;
      wakes += 1;
    }
    flushSync();
    expect(wakes).toBeLessThanOrEqual(10);
    expect(shownAge(root)).toContain(minutes());
  });

  it('run no timer while the window is hidden, and are current as soon as it shows', () => {
    const root = show();
    setVisibility('hidden');
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(10 * 60_000);
    setVisibility('visible');
    expect(shownAge(root)).toContain(minutes());
    expect(minutes()).toBe('10 min');
  });
});
