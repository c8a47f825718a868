// The card as the window mounts it: its heading and span, one button per line under its
// section, a click opening the line's target, and closing it.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import AwayCard from './AwayCard.svelte';
import type { AwaySummary } from '../lib/protocol';
import { shortTime } from '../lib/time';

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

const back = new Date(2026, 10, 24, 9, 30).getTime();
const summary: AwaySummary = {
  away_since: back - 3 * 3_600_000,
  back_at: back,
  lines: [
    { kind: 'ran', title: 'Build the release', text: 'Vigil continued on its own 2 times', at: back - 60_000, target: { type: 'conversation', session_id: 's1', message_ts: 42 } },
    { kind: 'failed', title: 'Backup', text: 'failed: rsync: connection refused', at: back - 120_000, target: { type: 'routine', routine_id: 'backup' } },
    { kind: 'waiting', title: 'Build the release', text: 'waits for your approval: make deploy', at: back - 180_000, target: { type: 'conversation', session_id: 's1', approval_id: 'a1' } },
  ],
};

function show(onOpen = vi.fn(), onDismiss = vi.fn()): HTMLElement {
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(mount(AwayCard, { target, props: { summary, onOpen, onDismiss } }));
  flushSync();
  return target;
}

describe('AwayCard', () => {
  it('lists each line under its section with its time', () => {
    const el = show();
    expect(el.querySelector('h2')?.textContent).toBe('While you were away');
    expect(el.querySelector('[data-testid="away-span"]')?.textContent).toBe(`3 h, since ${shortTime(back - 3 * 3_600_000)}`);
    expect([...el.querySelectorAll('h3')].map((h) => h.textContent)).toEqual(['Ran', 'Failed or unknown', 'Waiting for you']);
    const lines = [...el.querySelectorAll<HTMLButtonElement>('[data-testid="away-line"]')];
    expect(lines.map((l) => [l.dataset.kind, l.querySelector('.what')?.textContent, l.querySelector('time')?.textContent])).toEqual([
      ['ran', 'Build the release Vigil continued on its own 2 times', shortTime(back - 60_000)],
      ['failed', 'Backup failed: rsync: connection refused', shortTime(back - 120_000)],
      ['waiting', 'Build the release waits for your approval: make deploy', shortTime(back - 180_000)],
    ]);
  });

  it('opens what a line is about, and closes', () => {
    const onOpen = vi.fn();
    const onDismiss = vi.fn();
    const el = show(onOpen, onDismiss);
    const lines = el.querySelectorAll<HTMLButtonElement>('[data-testid="away-line"]');
    lines[1].click();
    lines[2].click();
    expect(onOpen.mock.calls).toEqual([[summary.lines[1].target], [summary.lines[2].target]]);
    el.querySelector<HTMLButtonElement>('[data-testid="away-dismiss"]')?.click();
    expect(onDismiss).toHaveBeenCalledOnce();
  });
});
