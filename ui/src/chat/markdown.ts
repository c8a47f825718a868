// Renders assistant text (untrusted: it comes from a model, which may echo anything a web
// page or a user pasted) to HTML that is safe to put into the DOM. marked parses; DOMPurify
// has the last word. Images, forms and inline styles are removed as well as scripts: the
// app's CSP blocks remote images anyway, and styles or forms from a reply could dress
// themselves up as Vigil's own UI. Every element showing the result handles its links with
// `safeLinks` (lib/links.ts): a click never navigates the window.

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
