// Settings → Tools as the pane mounts it: each MCP server's state (running with its tools,
// failed with its error and stderr), the trusted switch, Restart and Remove, and adding by
// pasting a config with its tokens kept in the keyring; a refused paste says why at the field.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import type { McpView } from '../lib/protocol';
import ToolsSection from './ToolsSection.svelte';
import type { ToolsStore } from './tools.svelte';

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

const view: McpView = {
  path: '/home/you/.local/share/vigil/mcp.json',
  servers: [
    {
      name: 'broken',
      transport: 'stdio',
      target: 'sh -c exit 3',
      state: { state: 'failed', error: 'exited during initialize (exit status 3)' },
      tools: [],
      trusted: false,
      timeout_secs: 60,
      stderr_tail: ['cannot open the database'],
      secrets: [],
    },
    {
      name: 'everything',
      transport: 'stdio',
      target: 'npx -y @modelcontextprotocol/server-everything',
      state: { state: 'running' },
      tools: [
        { name: 'echo', qualified_name: 'mcp__everything__echo', description: 'Echoes back the input string', read_only: true },
        { name: 'get-sum', qualified_name: 'mcp__everything__get-sum', description: 'Adds', read_only: true },
      ],
      trusted: true,
      timeout_secs: 60,
      stderr_tail: [],
      secrets: ['TOKEN'],
    },
  ],
};

function show(v: McpView | null = view) {
  const store = {
    view: v,
    loadError: null,
    start: vi.fn(() => () => {}),
    add: vi.fn(async () => {}),
    remove: vi.fn(async () => {}),
    setTrusted: vi.fn(async () => {}),
    restart: vi.fn(async () => {}),
  };
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(mount(ToolsSection, { target, props: { store: store as unknown as ToolsStore } }));
  flushSync();
  const el = <T extends HTMLElement>(selector: string) => target.querySelector<T>(selector);
  const all = (selector: string) => [...target.querySelectorAll<HTMLElement>(selector)];
  return { target, store, el, all };
}

const settle = async () => {
  await new Promise((r) => setTimeout(r, 0));
  flushSync();
};

describe('Settings → Tools', () => {
  it('shows each server with its state, its tools, and why a failed one failed', () => {
    const { all, el, store } = show();
    expect(store.start).toHaveBeenCalledOnce();
    const servers = all('[data-testid="mcp-server"]');
    expect(servers.map((s) => [s.dataset.name, s.dataset.state])).toEqual([
      ['broken', 'failed'],
      ['everything', 'running'],
    ]);
    const [broken, everything] = servers;
    expect(broken.querySelector('[data-testid="mcp-state"]')?.textContent?.trim()).toBe(
      'Failed: exited during initialize (exit status 3).',
    );
    expect(broken.querySelector('[data-testid="mcp-stderr"]')?.textContent).toBe('cannot open the database');
    expect(broken.querySelector('[data-testid="mcp-restart"]')).not.toBeNull();
    expect(everything.querySelector('[data-testid="mcp-state"]')?.textContent?.trim()).toBe('Running · 2 tools');
    expect([...everything.querySelectorAll('[data-testid="mcp-tool"] code')].map((c) => c.textContent)).toEqual(['echo', 'get-sum']);
    expect(everything.querySelector('[data-testid="mcp-restart"]')).toBeNull();
    expect((everything.querySelector('[data-testid="mcp-trusted"]') as HTMLInputElement).checked).toBe(true);
    expect(everything.textContent).toContain('In the keyring: TOKEN');
    expect(el('[data-testid="mcp-problem"]')).toBeNull();
  });

  it('switches trust, restarts and removes through the store', async () => {
    const { all, store } = show();
    const [broken, everything] = all('[data-testid="mcp-server"]');
    (broken.querySelector('[data-testid="mcp-trusted"]') as HTMLInputElement).click();
    await settle();
    expect(store.setTrusted).toHaveBeenCalledWith('broken', true);
    (broken.querySelector('[data-testid="mcp-restart"]') as HTMLButtonElement).click();
    await settle();
    expect(store.restart).toHaveBeenCalledWith('broken');
    (everything.querySelector('[data-testid="mcp-remove"]') as HTMLButtonElement).click();
    await settle();
    expect(store.remove).toHaveBeenCalledWith('everything');
  });

  it('adds a pasted config with its token in the keyring, and shows a refusal at the field', async () => {
    const { el, all, store } = show({ path: '/d/mcp.json', servers: [], problem: 'mcp.json is not a valid MCP config; it was kept as mcp.json.broken-1.' });
    expect(el('[data-testid="mcp-problem"]')?.textContent).toContain('kept as mcp.json.broken-1');
    expect(el('[data-testid="mcp-empty"]')).not.toBeNull();
    const paste = el<HTMLTextAreaElement>('[data-testid="mcp-paste"]')!;
    const json = JSON.stringify({ mcpServers: { github: { command: 'npx', env: { GITHUB_TOKEN: 'ghp_1', DEBUG: '1' } } } });
    paste.value = json;
    paste.dispatchEvent(new Event('input', { bubbles: true }));
    flushSync();
    const secrets = all('[data-testid="mcp-secret"]') as HTMLInputElement[];
    expect(secrets.map((s) => [s.dataset.name, s.checked])).toEqual([
      ['GITHUB_TOKEN', true],
      ['DEBUG', false],
    ]);
    secrets[1].click();
    flushSync();
    el<HTMLButtonElement>('[data-testid="mcp-add"]')!.click();
    await settle();
    expect(store.add).toHaveBeenCalledWith(json, [
      { server: 'github', field: 'env', name: 'GITHUB_TOKEN' },
      { server: 'github', field: 'env', name: 'DEBUG' },
    ]);
    expect(paste.value).toBe('');

    store.add.mockRejectedValueOnce({ code: 'invalid_mcp', message: 'That is not valid JSON: EOF.', field: 'json' });
    paste.value = '{';
    paste.dispatchEvent(new Event('input', { bubbles: true }));
    flushSync();
    el<HTMLButtonElement>('[data-testid="mcp-add"]')!.click();
    await settle();
    expect(el('[data-testid="mcp-add-error"]')?.textContent).toBe('That is not valid JSON: EOF.');
    expect(paste.getAttribute('aria-invalid')).toBe('true');
    expect(paste.value).toBe('{');
  });
});
