// A conversation in the sidebar while Vigil works there on its own: the spinner says so,
// the count says how many turns it took by itself, and the loop button turns continuing on
// its own off (and back on) for that conversation.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import type { SessionSummary } from '../lib/protocol';
import SessionItem from './SessionItem.svelte';

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

const base: SessionSummary = { id: 's-b', title: 'Nightly build', created_at: 0, updated_at: Date.now(), continuations: 0 };

function show(props: Record<string, unknown>, session: Partial<SessionSummary> = {}): HTMLElement {
  const target = document.createElement('ul');
  document.body.append(target);
  mounted.push(
    mount(SessionItem, {
      target,
      props: {
        session: { ...base, ...session },
        active: false,
        running: false,
        waiting: false,
        unread: 0,
        now: Date.now(),
        onSelect: () => {},
        onRename: () => {},
        onDelete: () => {},
        ...props,
      },
    }),
  );
  flushSync();
  return target;
}

const q = (root: HTMLElement, id: string) => root.querySelector<HTMLElement>(`[data-testid="${id}"]`);

describe('a conversation working on its own', () => {
  it('shows a spinner instead of the activity dot while a turn it started itself runs, and how many it took', () => {
    const item = show({ running: true, unattended: true, globalLimit: 10 }, { continuations: 2 });
    expect(q(item, 'session-unattended')?.textContent).toBe('on its own');
    expect(q(item, 'session-activity')).toBeNull();
    expect(q(item, 'session-continuations')?.textContent).toBe('2/10');
    expect(q(item, 'session-continuations')?.title).toMatch(/carried on here by itself 2 times/);
  });

  it('shows the plain activity dot for the user’s own turn, and no count before any turn on its own', () => {
    const item = show({ running: true, unattended: false, globalLimit: 10 });
    expect(q(item, 'session-activity')).not.toBeNull();
    expect(q(item, 'session-unattended')).toBeNull();
    expect(q(item, 'session-continuations')).toBeNull();
  });

  it('the loop button turns continuing on its own off, and says when it is off', () => {
    const onSetContinuing = vi.fn();
    const on = show({ globalLimit: 10, onSetContinuing });
    const toggle = q(on, 'session-continue-toggle')!;
    expect(toggle.getAttribute('aria-pressed')).toBe('true');
    expect(q(on, 'session-manual')).toBeNull();
    toggle.click();
    expect(onSetContinuing).toHaveBeenCalledWith(false);

    const off = show({ globalLimit: 10, onSetContinuing }, { continuation_limit: 0 });
    expect(q(off, 'session-manual')).not.toBeNull();
    const offToggle = q(off, 'session-continue-toggle')!;
    expect(offToggle.getAttribute('aria-pressed')).toBe('false');
    offToggle.click();
    expect(onSetContinuing).toHaveBeenLastCalledWith(true);
  });
});
