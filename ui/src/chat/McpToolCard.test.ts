// An MCP call in the chat is a tool card like the built-in ones: the tool by its own name
// with its server beside it, the arguments, the server's progress while it runs, the result.
import { afterEach, describe, expect, it } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import ToolCard from './ToolCard.svelte';
import type { ToolCard as Card } from './content';
import { mcpToolName } from './mcp';

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

function show(card: Card): HTMLElement {
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(mount(ToolCard, { target, props: { card } }));
  flushSync();
  return target;
}

const q = (root: HTMLElement, selector: string) => root.querySelector(selector);

describe('an MCP tool card', () => {
  it('reads the server and the tool from the name the model calls', () => {
    expect(mcpToolName('mcp__everything__trigger-long-running-operation')).toEqual({
      server: 'everything',
      tool: 'trigger-long-running-operation',
    });
    expect(mcpToolName('exec')).toBeNull();
    expect(mcpToolName('mcp__broken')).toBeNull();
  });

  it('shows the tool, its server and the live progress while it runs, then the result', () => {
    const running: Card = {
      id: 'c1',
      name: 'mcp__everything__trigger-long-running-operation',
      input: { duration: 10, steps: 5 },
      status: 'running',
      output: 'Progress 2 of 5',
    };
    let root = show(running);
    expect(q(root, '.name')?.textContent).toBe('trigger-long-running-operation');
    expect(q(root, '[data-testid="tool-card-server"]')?.textContent).toBe('everything');
    expect(q(root, '.label')?.textContent).toBe('Progress');
    expect(q(root, '.output')?.textContent).toBe('Progress 2 of 5');

    document.body.innerHTML = '';
    root = show({ ...running, status: 'done', output: 'Long running operation completed.' });
    q(root, 'button.head')?.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    flushSync();
    expect(q(root, '.label')?.textContent).toBe('Result');
    expect(q(root, '.output')?.textContent).toBe('Long running operation completed.');
    expect(q(root, 'pre.mono')?.textContent).toContain('"steps": 5');
  });

  it('leaves a built-in tool as it was', () => {
    const root = show({ id: 'c2', name: 'read', input: { path: 'a.txt' }, status: 'done', output: 'x' });
    expect(q(root, '.name')?.textContent).toBe('read');
    expect(q(root, '[data-testid="tool-card-server"]')).toBeNull();
  });
});
