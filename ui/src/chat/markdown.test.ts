import { describe, expect, it } from 'vitest';
import { renderMarkdown } from './markdown';

describe('renderMarkdown', () => {
  it('renders Markdown with code blocks', () => {
    const html = renderMarkdown('# Title\n\nSome **bold** text.\n\n```rust\nfn main() {}\n```');
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<pre><code>fn main() {}\n</code></pre>');
  });

  it('removes an image with an onerror handler', () => {
    const html = renderMarkdown('hello <img src=x onerror=alert(1)>');
    expect(html).not.toMatch(/<img/i);
    expect(html).not.toMatch(/onerror/i);
    expect(html).toContain('hello');
  });

  it('removes script elements', () => {
    const html = renderMarkdown('before\n\n<script>alert(1)</script>\n\nafter');
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toContain('alert(1)');
    expect(html).toContain('after');
  });

  it('removes javascript: links, inline handlers and styles but keeps ordinary links', () => {
    const html = renderMarkdown(
      '[x](javascript:alert(1)) <a href="https://example.com" onclick="alert(1)" style="position:fixed">ok</a>',
    );
    expect(html).not.toMatch(/javascript:/i);
    expect(html).not.toMatch(/onclick|style=/i);
    expect(html).toContain('href="https://example.com"');
    expect(html).toContain('rel="noopener noreferrer"');
  });

  it('keeps code that looks like HTML as text', () => {
    const html = renderMarkdown('`<script>alert(1)</script>`');
    expect(html).toContain('&lt;script&gt;');
    expect(html).not.toMatch(/<script/i);
  });
});
