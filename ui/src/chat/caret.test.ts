// The message box's caret rests after 10 s without input (caret.ts): the box gives up the
// focus, so WebKit stops blinking the caret and repainting the window, but it keeps its
// focused look, what is typed next lands where the caret was, Enter still sends, and a
// half-written message at rest still keeps an approval card from taking the keys.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, tick, unmount } from 'svelte';
import ApprovalCard from '../approvals/ApprovalCard.svelte';
import type { Approval } from '../approvals/state';
import { CARET_REST_MS } from './caret';
import Composer from './Composer.svelte';

let mounted: Record<string, unknown>[] = [];

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
  vi.useRealTimers();
});

function show(onSend = vi.fn(async () => true)) {
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(mount(Composer, { target, props: { busy: false, onSend, onStop: vi.fn() } }));
  flushSync();
  const area = target.querySelector<HTMLTextAreaElement>('[data-testid="chat-input"]')!;
  return { area, box: area.closest('.box')!, onSend };
}

function write(area: HTMLTextAreaElement, text: string): void {
  area.value = text;
  area.dispatchEvent(new Event('input', { bubbles: true }));
  flushSync();
}

/** A key pressed with the focus wherever it is now (nothing: the page's body). */
function press(key: string, init: KeyboardEventInit = {}): void {
  (document.activeElement ?? document.body).dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true, ...init }));
  flushSync();
}

describe('the message box at rest', () => {
  it('gives up the focus after 10 s untouched, still looks focused, and takes the next keys where the caret was', () => {
    const { area, box } = show();
    write(area, 'hello world');
    area.setSelectionRange(5, 5);
    vi.advanceTimersByTime(CARET_REST_MS - 1);
    expect(document.activeElement).toBe(area);
    vi.advanceTimersByTime(1);
    flushSync();
    expect(document.activeElement).not.toBe(area);
    expect(box.classList.contains('resting')).toBe(true);

    press(',');
    expect(document.activeElement).toBe(area);
    expect(area.value).toBe('hello, world');
    expect(box.classList.contains('resting')).toBe(false);
  });

  it('Backspace and Delete after a rest correct what was written, as with the focus', () => {
    const { area } = show();
    write(area, 'helo 👋');
    area.setSelectionRange(3, 3);
    vi.advanceTimersByTime(CARET_REST_MS);
    expect(document.activeElement).not.toBe(area);
    press('Backspace');
    expect(document.activeElement).toBe(area);
    expect(area.value).toBe('heo 👋');
    vi.advanceTimersByTime(CARET_REST_MS);
    press('l');
    expect(area.value).toBe('helo 👋');
    area.setSelectionRange(5, 5);
    vi.advanceTimersByTime(CARET_REST_MS);
    press('Delete');
    expect(area.value, 'the emoji as a whole').toBe('helo ');
  });

  it('typing keeps it awake; Enter after a rest sends what was written', async () => {
    const { area, onSend } = show();
    write(area, 'ship it');
    vi.advanceTimersByTime(CARET_REST_MS - 1000);
    write(area, 'ship it!');
    vi.advanceTimersByTime(CARET_REST_MS - 1000);
    expect(document.activeElement).toBe(area);
    vi.advanceTimersByTime(1000);
    expect(document.activeElement).not.toBe(area);
    press('Enter');
    // The composer clears the box and grows it back to one line before handing over.
    await tick();
    await tick();
    expect(onSend).toHaveBeenCalledWith('ship it!', []);
  });

  it('a half-written message at rest keeps an approval card from taking the keys', async () => {
    const { area } = show();
    write(area, 'rm -rf build');
    vi.advanceTimersByTime(CARET_REST_MS);
    const target = document.createElement('div');
    document.body.append(target);
    const approval: Approval = {
      id: 'a1',
      sessionId: 'main',
      runId: 'r1',
      kind: 'exec',
      command: 'make deploy',
      prefix: 'make deploy',
      cwd: '/w',
      env: [],
      parts: [{ text: 'make deploy', covered: false }],
      unprovable: null,
      outsideSandbox: false,
      execRun: null,
      expiresAt: null,
      timedOut: false,
      ts: 1,
      state: 'pending',
      error: null,
    };
    mounted.push(mount(ApprovalCard, { target, props: { approval, takeFocus: true, onAnswer: vi.fn() } }));
    flushSync();
    // The card takes the focus a tick after it shows.
    await tick();
    await tick();
    expect(target.contains(document.activeElement)).toBe(false);
    press('x');
    expect(area.value).toBe('rm -rf buildx');
  });
});
