// The one way a link from untrusted text is followed: it is not. Replies, compaction
// summaries, background updates and a terminal's OSC 8 hyperlinks all come from a model or a
// program that may echo anything a web page said; a click on one of their links must never
// navigate the app's own webview (the shell refuses such navigations too, see
// src-tauri/src/navigation.rs). The address is copied instead, for the user to open in their
// browser if they mean to, and a note says so.

import type { ILinkHandler } from '@xterm/xterm';

/** What the user is told after a click on a link: copied, or (no clipboard) the address. */
export function copyLink(href: string): Promise<string> {
  if (!navigator.clipboard) return Promise.resolve(href);
  return navigator.clipboard.writeText(href).then(
    () => `Link copied: ${href}`,
    () => href,
  );
}

/**
 * A click inside rendered markdown: the webview does not follow it, and an address is copied.
 * Returns the note to show, or null when the click was not on a link (or on an in-page one).
 */
export function copyLinkInstead(event: MouseEvent): Promise<string> | null {
  const link = (event.target as Element | null)?.closest?.('a');
  if (!link) return null;
  event.preventDefault();
  const href = link.getAttribute('href') ?? '';
  if (href.startsWith('#') || href === '') return null;
  return copyLink(href);
}

/**
 * Svelte action for every element holding rendered markdown (`use:safeLinks={onNote}`): a
 * click, or a middle click, on a link inside goes through {@link copyLinkInstead}; `onNote`
 * gets the note to show.
 */
export function safeLinks(node: HTMLElement, onNote: (note: string) => void): { update: (f: typeof onNote) => void; destroy: () => void } {
  let notify = onNote;
  const handle = (event: MouseEvent) => {
    // Only the primary and the middle button follow links; a right click opens the menu.
    if (event.type === 'auxclick' && event.button !== 1) return;
    void copyLinkInstead(event)?.then((note) => notify(note));
  };
  node.addEventListener('click', handle);
  node.addEventListener('auxclick', handle);
  return {
    update(f) {
      notify = f;
    },
    destroy() {
      node.removeEventListener('click', handle);
      node.removeEventListener('auxclick', handle);
    },
  };
}

/**
 * xterm.js's link handler for OSC 8 hyperlinks. Without one, xterm asks `confirm()` and then
 * opens the address with `window.open`; with this one the address is copied like any other
 * link. Only http(s) links are made clickable (`allowNonHttpProtocols` stays off).
 */
export function terminalLinkHandler(onNote: (note: string) => void): ILinkHandler {
  return {
    activate(event, text) {
      event.preventDefault();
      void copyLink(text).then(onNote);
    },
    allowNonHttpProtocols: false,
  };
}
