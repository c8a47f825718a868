// A link from untrusted text never navigates the app's window, on every surface that shows
// such text: a reply, the compaction summary, a background update (summary and details) and
// a terminal's OSC 8 hyperlink. Each surface is mounted as the app mounts it, its link
// clicked, and the click must be cancelled (nothing followed) with the address copied.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount, type Component } from 'svelte';
import MessageView from '../chat/MessageView.svelte';
import SummaryBlock from '../chat/SummaryBlock.svelte';
import type { ChatItem } from '../chat/state';
import BackgroundUpdateCard from '../heartbeat/BackgroundUpdateCard.svelte';
import type { Update } from '../heartbeat/updates';
import { terminalOptions } from '../processes/options';
import { copyLinkInstead, safeLinks } from './links';

const URL_A = 'https://attacker.example/next?token=1';
const TEXT = `Read [the guide](${URL_A}) and [the top](#top).`;

let writeText: ReturnType<typeof vi.fn>;
let mounted: Record<string, unknown>[] = [];

beforeEach(() => {
  writeText = vi.fn(() => Promise.resolve());
  Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
  vi.spyOn(window, 'open').mockImplementation(() => null);
  vi.spyOn(window, 'confirm').mockImplementation(() => true);
});

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
  vi.restoreAllMocks();
});

function show<P extends Record<string, unknown>>(component: Component<P>, props: P): HTMLElement {
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(mount(component, { target, props }));
  flushSync();
  return target;
}

/** Clicks `link` as a user would (a bubbling, cancellable click); true if the app cancelled
 *  it. The document's own listener then cancels whatever is left, so jsdom never tries to
 *  navigate. */
function click(link: Element, init: MouseEventInit = {}, type = 'click'): boolean {
  let cancelled = false;
  const last = (e: Event) => {
    cancelled = e.defaultPrevented;
    e.preventDefault();
  };
  document.addEventListener(type, last);
  try {
    link.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true, button: 0, ...init }));
  } finally {
    document.removeEventListener(type, last);
  }
  return cancelled;
}

/** Lets the clipboard's promise and Svelte's update run. */
async function settle(): Promise<void> {
  await Promise.resolve();
  await Promise.resolve();
  flushSync();
}

function linkIn(root: Element, selector: string): HTMLAnchorElement {
  const link = root.querySelector<HTMLAnchorElement>(`${selector} a[href="${URL_A}"]`);
  if (!link) throw new Error(`no link in ${selector}: ${root.innerHTML}`);
  return link;
}

/** The click is cancelled, the address copied and the note shown, in `root`. */
async function expectCopied(root: Element, link: Element): Promise<void> {
  expect(click(link), 'the click is cancelled: the window does not follow the link').toBe(true);
  await settle();
  expect(writeText).toHaveBeenCalledWith(URL_A);
  expect(root.querySelector('[data-testid="link-note"]')?.textContent).toContain(`Link copied: ${URL_A}`);
  expect(window.open).not.toHaveBeenCalled();
}

function chatItem(extra: Partial<ChatItem>): ChatItem {
  return {
    key: 'k1', kind: 'message', role: 'assistant', text: TEXT, thinking: '', tools: [], ts: 1, runId: null,
    streaming: false, stopped: false, pending: false, queued: false, acked: false, interrupt: false,
    usage: null, compaction: null, ...extra,
  };
}

function update(extra: Partial<Update> = {}): Update {
  return {
    event_id: 'u1', event_type: 'heartbeat_result', source: 'heartbeat_session_main', summary: TEXT,
    detail: `${TEXT}\n\nMore: [again](${URL_A})`, created_at: 1, priority: 1,
    sessionId: 'main', unread: true, seen: false, ...extra,
  } as Update;
}

describe('a link in', () => {
  it('a reply is copied, not followed', async () => {
    const root = show(MessageView, { item: chatItem({}) });
    await expectCopied(root, linkIn(root, '[data-testid="message-text"]'));
  });

  it('the compaction summary is copied, not followed', async () => {
    const item = chatItem({
      kind: 'summary', role: 'user',
      compaction: { summarizedMessages: 40, tokensBefore: 170_000, tokensAfter: 9_000 } as ChatItem['compaction'],
    });
    const root = show(SummaryBlock, { item });
    const details = root.querySelector('details')!;
    details.open = true;
    details.dispatchEvent(new Event('toggle'));
    flushSync();
    await expectCopied(root, linkIn(root, '[data-testid="summary-text"]'));
  });

  it("a background update's summary is copied, not followed", async () => {
    const root = show(BackgroundUpdateCard, { update: update() });
    await expectCopied(root, linkIn(root, '[data-testid="background-update-summary"]'));
  });

  it("a background update's details are copied, not followed", async () => {
    const root = show(BackgroundUpdateCard, { update: update() });
    await expectCopied(root, linkIn(root, '[data-testid="background-update-detail"]'));
  });

  it("a terminal's OSC 8 hyperlink is copied, not opened", async () => {
    const notes: string[] = [];
    const options = terminalOptions({ font: 'monospace', running: true, pty: true, dark: false, onLinkNote: (n) => notes.push(n) });
    expect(options.linkHandler, 'without a handler xterm confirms and calls window.open').toBeTruthy();
    expect(options.linkHandler!.allowNonHttpProtocols ?? false).toBe(false);
    const event = new MouseEvent('click', { cancelable: true });
    options.linkHandler!.activate(event, URL_A, { start: { x: 1, y: 1 }, end: { x: 10, y: 1 } });
    await settle();
    expect(event.defaultPrevented).toBe(true);
    expect(writeText).toHaveBeenCalledWith(URL_A);
    expect(notes).toEqual([`Link copied: ${URL_A}`]);
    expect(window.open).not.toHaveBeenCalled();
    expect(window.confirm).not.toHaveBeenCalled();
  });
});

describe('safeLinks', () => {
  it('cancels a middle click on a link too, and leaves other clicks and right clicks alone', async () => {
    const host = document.createElement('div');
    host.innerHTML = `<p>text <a href="${URL_A}">link</a></p>`;
    document.body.append(host);
    const notes: string[] = [];
    const action = safeLinks(host, (n) => notes.push(n));
    const link = host.querySelector('a')!;
    expect(click(link, { button: 1 }, 'auxclick')).toBe(true);
    expect(click(link, { button: 2 }, 'auxclick')).toBe(false);
    expect(click(host.querySelector('p')!)).toBe(false);
    await settle();
    expect(notes).toEqual([`Link copied: ${URL_A}`]);
    action.destroy();
    expect(click(link)).toBe(false);
  });

  it('cancels an in-page link without copying it', () => {
    const host = document.createElement('div');
    host.innerHTML = '<a href="#top">top</a>';
    document.body.append(host);
    const event = new MouseEvent('click', { bubbles: true, cancelable: true });
    Object.defineProperty(event, 'target', { value: host.firstChild });
    expect(copyLinkInstead(event)).toBeNull();
    expect(event.defaultPrevented).toBe(true);
    expect(writeText).not.toHaveBeenCalled();
  });

  it('says the address when there is no clipboard', async () => {
    Object.defineProperty(navigator, 'clipboard', { value: undefined, configurable: true });
    const host = document.createElement('div');
    host.innerHTML = `<a href="${URL_A}">x</a>`;
    document.body.append(host);
    const notes: string[] = [];
    safeLinks(host, (n) => notes.push(n));
    expect(click(host.firstChild as Element)).toBe(true);
    await settle();
    expect(notes).toEqual([URL_A]);
  });
});

// Every component that renders markdown puts each rendered block under `safeLinks`, so a new
// surface cannot forget it.
const sources = import.meta.glob<string>('../**/*.svelte', { query: '?raw', import: 'default', eager: true });

it('every element holding rendered markdown handles its links with safeLinks', () => {
  const surfaces = Object.entries(sources).filter(([, text]) => text.includes('renderMarkdown('));
  expect(surfaces.map(([file]) => file).sort()).toEqual([
    '../chat/MessageView.svelte',
    '../chat/SummaryBlock.svelte',
    '../heartbeat/BackgroundUpdateCard.svelte',
  ]);
  const unguarded = surfaces.flatMap(([file, text]) =>
    [...text.matchAll(/<[a-z]+\b[^>]*>\s*\{@html [^}]+\}/g)]
      .filter((m) => !m[0].includes('use:safeLinks'))
      .map((m) => `${file}: ${m[0]}`),
  );
  expect(unguarded).toEqual([]);
});
