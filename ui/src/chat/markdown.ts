// Renders assistant text (untrusted: it comes from a model, which may echo anything a web
// page or a user pasted) to HTML that is safe to put into the DOM. marked parses; DOMPurify
// has the last word. Images, forms and inline styles are removed as well as scripts: the
// app's CSP blocks remote images anyway, and styles or forms from a reply could dress
// themselves up as Vigil's own UI.

import createDOMPurify from 'dompurify';
import { Marked } from 'marked';

const marked = new Marked({ gfm: true, breaks: false, async: false });

const purify = createDOMPurify(window);

purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('rel', 'noopener noreferrer');
    const href = node.getAttribute('href');
    if (href) node.setAttribute('title', href);
  }
});

const PURIFY_CONFIG = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: [
    'style', 'img', 'picture', 'source', 'video', 'audio', 'track', 'form', 'input', 'button',
    'textarea', 'select', 'option', 'dialog', 'iframe', 'object', 'embed', 'link', 'meta', 'base',
  ],
  FORBID_ATTR: ['style', 'class', 'id', 'srcset', 'action', 'formaction'],
};
// Set once: a config passed to every `sanitize` call is parsed again each time, which was
// most of a call's cost as a long conversation opened.
purify.setConfig(PURIFY_CONFIG);

/** Markdown → sanitised HTML. Never throws: on a parser failure the text is shown escaped. */
export function renderMarkdown(text: string): string {
  let html: string;
  try {
    html = marked.parse(text) as string;
  } catch {
    html = `<pre>${escapeHtml(text)}</pre>`;
  }
  return purify.sanitize(html);
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * A click on a link inside rendered markdown: the app's own webview must not navigate away,
 * so the link is copied instead. Returns the note to show, or null when the click was not on
 * an external link.
 */
export function copyLinkInstead(event: MouseEvent): Promise<string> | null {
  const link = (event.target as Element | null)?.closest?.('a');
  if (!link) return null;
  event.preventDefault();
  const href = link.getAttribute('href') ?? '';
  if (href.startsWith('#') || href === '') return null;
  if (!navigator.clipboard) return Promise.resolve(href);
  return navigator.clipboard.writeText(href).then(
    () => `Link copied: ${href}`,
    () => href,
  );
}
