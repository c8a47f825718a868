// The app runs with Tauri's `freezePrototype`, which freezes Object.prototype before any
// script; libraries that assign over inherited properties break only there. Check ours.
import { describe, expect, it } from 'vitest';

describe('with a frozen Object.prototype', () => {
  it('renders Markdown and folds events', async () => {
    Object.freeze(Object.prototype);
    const { renderMarkdown } = await import('./markdown');
    const { applyEvent, initialState } = await import('./state');
    expect(renderMarkdown('**x** <img src=x onerror=alert(1)>\n\n```\ncode\n```')).toContain('<strong>x</strong>');
    const s = applyEvent(initialState(), {
      id: '1', ts: 1, session_id: null, scope: 'primary', source: 'agent', run_id: 'r', type: 'turn_started', user_text: 'hi',
    });
    expect(s.items).toHaveLength(2);
  });
});
