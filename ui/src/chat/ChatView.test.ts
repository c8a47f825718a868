// A long conversation in the window: scrolled to the top it shows its first message, and
// back at the newest it lets go of the earlier messages it rendered on the way up (they
// come back when scrolled up again), so reading back through a long history does not keep
// all of it in the page.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, tick, unmount } from 'svelte';
import { ApprovalsStore } from '../approvals/approvals.svelte';
import { UpdatesStore } from '../heartbeat/updates.svelte';
import type { Message } from '../lib/protocol';
import { ChatStore } from './chat.svelte';
import ChatView from './ChatView.svelte';
import { loaded, msg } from './testing';
import { FIRST_STEP } from './window';

/** jsdom lays nothing out: each rendered message is 100 px, the list shows 600 px of them. */
const ITEM_PX = 100;
const VIEW_PX = 600;
const scrollTops = new WeakMap<Element, number>();
const isScroller = (el: Element) => el.classList.contains('scroller');
const heightOf = (el: Element) => (isScroller(el) ? el.querySelectorAll('[data-item-key]').length * ITEM_PX : 0);

beforeEach(() => {
  // Nothing resizes here.
  vi.stubGlobal('ResizeObserver', class { observe() {} disconnect() {} });
  const define = (name: string, get: (el: Element) => number, set?: (el: Element, v: number) => void) =>
    Object.defineProperty(HTMLElement.prototype, name, {
      configurable: true,
      get(this: Element) {
        return get(this);
      },
      set(this: Element, v: number) {
        set?.(this, v);
      },
    });
  define('scrollHeight', heightOf);
  define('clientHeight', (el) => (isScroller(el) ? VIEW_PX : 0));
  define(
    'scrollTop',
    (el) => scrollTops.get(el) ?? 0,
    (el, v) => scrollTops.set(el, Math.max(0, Math.min(v, heightOf(el) - VIEW_PX))),
  );
});

let mounted: Record<string, unknown>[] = [];
afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
  vi.unstubAllGlobals();
  for (const p of ['scrollHeight', 'clientHeight', 'scrollTop']) delete (HTMLElement.prototype as unknown as Record<string, unknown>)[p];
});

function conversation(pairs: number): Message[] {
  const messages: Message[] = [];
  for (let i = 0; i < pairs; i++) {
    messages.push(msg('user', `Question ${i}`, 1000 + 2 * i));
    messages.push(msg('assistant', `Answer ${i}`, 1001 + 2 * i, { model: 'm', stop_reason: 'end_turn' }));
  }
  return messages;
}

/** The conversation `messages` in a mounted chat view: its store and the element it is in. */
async function mountChat(messages: Message[]) {
  const chat = new ChatStore();
  chat.state = loaded(messages);
  chat.loaded = true;
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(
    mount(ChatView, {
      target,
      props: { chat, approvals: new ApprovalsStore(), updates: new UpdatesStore(), configured: true, onOpenSettings: () => {} },
    }),
  );
  flushSync();
  await tick();
  return { chat, target };
}

async function show(messages: Message[]) {
  const { target } = await mountChat(messages);
  return target.querySelector<HTMLElement>('.scroller')!;
}

async function scrollTo(scroller: HTMLElement, top: number): Promise<void> {
  scroller.scrollTop = top;
  scroller.dispatchEvent(new Event('scroll'));
  flushSync();
  await tick();
  flushSync();
}

const texts = (scroller: HTMLElement) => [...scroller.querySelectorAll('[data-testid="message-text"]')].map((e) => e.textContent!.trim());

describe('a long conversation', () => {
  it('scrolled to the top shows its first message; back at the newest it lets the earlier ones go', async () => {
    const scroller = await show(conversation(100));
    expect(texts(scroller).at(-1)).toBe('Answer 99');
    expect(texts(scroller)).toHaveLength(FIRST_STEP);

    for (let steps = 0; !texts(scroller).includes('Question 0') && steps < 20; steps++) await scrollTo(scroller, 0);
    expect(texts(scroller)[0]).toBe('Question 0');
    expect(texts(scroller)).toHaveLength(200);

    await scrollTo(scroller, scroller.scrollHeight);
    expect(texts(scroller)).toHaveLength(FIRST_STEP);
    expect(texts(scroller).at(-1)).toBe('Answer 99');
    expect(scroller.scrollTop).toBe(scroller.scrollHeight - VIEW_PX);

    await scrollTo(scroller, 0);
    expect(texts(scroller).length).toBeGreaterThan(FIRST_STEP);
  });
});

describe('a search result', () => {
  it('opens the conversation at its message by id: rendered although far above, scrolled to, outlined', async () => {
    const scrolled: string[] = [];
    // jsdom has no scrollIntoView (recorded above) and no CSS.escape (for the row's selector).
    vi.stubGlobal('CSS', { escape: (s: string) => s.replace(/[^\w-]/g, (c) => `\\${c}`) });
    Element.prototype.scrollIntoView = function (this: Element) {
      scrolled.push(this.textContent!.trim());
    };
    // Every message of one millisecond: only the id tells them apart.
    const messages = conversation(100).map((m) => ({ ...m, ts: 5_000 }));
    const { chat, target } = await mountChat(messages);
    expect(texts(target)).not.toContain('Answer 10');

    // `m21` is the 22nd message: Answer 10.
    chat.reveal = { messageId: 'm21' };
    for (let steps = 0; chat.reveal !== null && steps < 20; steps++) {
      flushSync();
      await tick();
    }
    expect(chat.reveal).toBeNull();
    const outlined = [...target.querySelectorAll('[data-testid="message"].highlight')].map((e) => e.textContent!.trim());
    expect(outlined).toHaveLength(1);
    expect(outlined[0]).toContain('Answer 10');
    expect(scrolled).toHaveLength(1);
    expect(scrolled[0]).toContain('Answer 10');
    delete (Element.prototype as unknown as Record<string, unknown>).scrollIntoView;
  });
});
