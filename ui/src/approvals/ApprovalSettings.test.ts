// Settings → Approvals, mounted as the settings pane mounts it, against a stand-in for the
// Rust commands: the sandbox's state in words, the network switch, and the extra writable
// folders (add by a full path, remove), with refusals shown where they belong.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, tick, unmount } from 'svelte';
import type { ApprovalsView, SandboxView } from '../lib/protocol';
import { addFolder, removeFolder, sandboxStatus } from './sandbox';

const backend = vi.hoisted(() => ({
  view: null as unknown as ApprovalsView,
  calls: [] as [string, unknown][],
  failNext: null as { code: string; message: string; field?: string } | null,
}));

vi.mock('../lib/ipc', () => {
  const answer = (name: string, arg: unknown, apply: () => void) => {
    backend.calls.push([name, arg]);
    if (backend.failNext) {
      const e = backend.failNext;
      backend.failNext = null;
      return Promise.reject(e);
    }
    apply();
    return Promise.resolve(structuredClone(backend.view));
  };
  return {
    getApprovals: () => Promise.resolve(structuredClone(backend.view)),
    setApprovalPolicy: vi.fn(),
    forgetApproval: vi.fn(),
    setSandboxNetwork: (on: boolean) => answer('set_sandbox_network', on, () => (backend.view.sandbox.network = on)),
    setSandboxWritable: (folders: string[]) =>
      answer('set_sandbox_writable', folders, () => (backend.view.sandbox.writable = [...folders])),
    toCommandError: (e: { code: string; message: string }) => e,
    PRIMARY_SESSION: 'main',
  };
});

const { default: ApprovalSettings } = await import('./ApprovalSettings.svelte');

const DEFAULTS = ['~/.ssh', '~/.gnupg', '~/.aws'];
const READY: SandboxView = {
  available: true,
  network: true,
  unattended_network: false,
  network_available: true,
  hidden: [...DEFAULTS],
  default_hidden: [...DEFAULTS],
  writable: ['/home/you/.cache/pip'],
};
const MISSING: SandboxView = {
  ...READY,
  available: false,
  problem: 'bubblewrap (bwrap) is not installed; install the `bubblewrap` package',
  writable: [],
};

let mounted: Record<string, unknown>[] = [];

beforeEach(() => {
  backend.view = { policy: 'ask', policy_from_env: false, rules: [], sandbox: structuredClone(READY) };
  backend.calls = [];
  backend.failNext = null;
});

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

/** Lets the stand-in's promises and Svelte's updates settle. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
    await tick();
  }
  flushSync();
}

async function show(): Promise<HTMLElement> {
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(mount(ApprovalSettings, { target }));
  await settle();
  return target;
}

const q = <E extends Element = HTMLElement>(root: HTMLElement, id: string) => root.querySelector<E & HTMLElement>(`[data-testid="${id}"]`);

async function type(root: HTMLElement, text: string): Promise<void> {
  const input = q<HTMLInputElement>(root, 'settings-sandbox-folder-input')!;
  input.value = text;
  input.dispatchEvent(new Event('input', { bubbles: true }));
  flushSync();
  q<HTMLFormElement>(root, 'settings-sandbox-writable')!.dispatchEvent(new Event('submit', { bubbles: true, cancelable: true }));
  await settle();
}

describe('the sandbox in Settings → Approvals', () => {
  it('says the sandbox is ready and what it lets commands do', async () => {
    const pane = await show();
    expect(q(pane, 'settings-sandbox')?.dataset.available).toBe('true');
    expect(q(pane, 'settings-sandbox-headline')?.textContent).toBe('Ready: commands run in a bubblewrap sandbox.');
    expect(q(pane, 'settings-sandbox-meaning')?.textContent).toMatch(/workspace .* writable/);
    expect(q<HTMLInputElement>(pane, 'settings-sandbox-network')!.checked).toBe(true);
  });

  it('says why the sandbox is unavailable and what that means for commands', async () => {
    backend.view.sandbox = structuredClone(MISSING);
    const pane = await show();
    expect(q(pane, 'settings-sandbox')?.dataset.available).toBe('false');
    const headline = q(pane, 'settings-sandbox-headline')!;
    expect(headline.textContent).toBe('The sandbox is unavailable: bubblewrap (bwrap) is not installed; install the bubblewrap package.');
    expect(headline.querySelector('code')?.textContent).toBe('bubblewrap');
    expect(q(pane, 'settings-sandbox-meaning')?.textContent).toBe(
      'Until it works, commands from the heartbeat and routines are refused, and your own turns ask before every command.',
    );
  });

  it('turns the network off and back on through the core, showing what it saved', async () => {
    const pane = await show();
    const box = q<HTMLInputElement>(pane, 'settings-sandbox-network')!;
    box.click();
    await settle();
    expect(backend.calls).toEqual([['set_sandbox_network', false]]);
    expect(box.checked).toBe(false);
    box.click();
    await settle();
    expect(backend.calls.at(-1)).toEqual(['set_sandbox_network', true]);
    expect(box.checked).toBe(true);
  });

  it('puts the switch back and says so when the network setting is not saved', async () => {
    const pane = await show();
    backend.failNext = { code: 'storage', message: 'disk full' };
    const box = q<HTMLInputElement>(pane, 'settings-sandbox-network')!;
    box.click();
    await settle();
    expect(box.checked).toBe(true);
    expect(q(pane, 'settings-sandbox-error')?.textContent).toBe('The network setting was not changed: disk full');
  });

  it('lists the extra writable folders and says why caches are not among them by default', async () => {
    const pane = await show();
    expect([...pane.querySelectorAll('[data-testid="settings-sandbox-folder"]')].map((e) => e.getAttribute('data-folder'))).toEqual([
      '/home/you/.cache/pip',
    ]);
    expect(q(pane, 'settings-sandbox-caches')?.textContent).toMatch(/~\/\.cargo or ~\/\.npm are not writable by default: a command could plant code there that later runs outside the sandbox/);
  });

  it('adds a folder typed as a full path and removes one', async () => {
    const pane = await show();
    await type(pane, '  /home/you/.cache/go-build/ ');
    expect(backend.calls).toEqual([['set_sandbox_writable', ['/home/you/.cache/pip', '/home/you/.cache/go-build']]]);
    expect([...pane.querySelectorAll('[data-testid="settings-sandbox-folder"]')].map((e) => e.getAttribute('data-folder'))).toEqual([
      '/home/you/.cache/pip',
      '/home/you/.cache/go-build',
    ]);
    expect(q<HTMLInputElement>(pane, 'settings-sandbox-folder-input')!.value).toBe('');

    q<HTMLButtonElement>(pane, 'settings-sandbox-folder-remove')!.click();
    await settle();
    expect(backend.calls.at(-1)).toEqual(['set_sandbox_writable', ['/home/you/.cache/go-build']]);
    expect([...pane.querySelectorAll('[data-testid="settings-sandbox-folder"]')].map((e) => e.getAttribute('data-folder'))).toEqual([
      '/home/you/.cache/go-build',
    ]);
  });

  it('refuses a relative path before asking the core, and shows the core’s refusal under the field', async () => {
    const pane = await show();
    await type(pane, 'projects/cache');
    expect(backend.calls).toEqual([]);
    expect(q(pane, 'settings-sandbox-folder-error')?.textContent).toMatch(/not a full path/);
    expect(q(pane, 'settings-sandbox-folder-input')?.getAttribute('aria-invalid')).toBe('true');

    backend.failNext = { code: 'invalid_folder', field: 'writable', message: '/nope is not a full path to an existing folder' };
    await type(pane, '/nope');
    expect(backend.calls).toEqual([['set_sandbox_writable', ['/home/you/.cache/pip', '/nope']]]);
    expect(q(pane, 'settings-sandbox-folder-error')?.textContent).toBe('/nope is not a full path to an existing folder');
    // Nothing changed, and what was typed stays for correcting.
    expect(pane.querySelectorAll('[data-testid="settings-sandbox-folder"]').length).toBe(1);
    expect(q<HTMLInputElement>(pane, 'settings-sandbox-folder-input')!.value).toBe('/nope');
  });
});

describe('the always-allowed rules in Settings → Approvals', () => {
  it('shows the folder each command rule applies in, the workspace for one from before folders', async () => {
    backend.view.rules = [
      { kind: 'exec', prefix: 'cargo build', created_at: 0, folder: '/home/you/projects/vigil' },
      { kind: 'exec', prefix: 'make', created_at: 0 },
      { kind: 'read_outside', prefix: '/home/you/notes', created_at: 0 },
    ];
    const pane = await show();
    const folders = [...pane.querySelectorAll('[data-testid="approval-rule"]')].map(
      (li) => li.querySelector('[data-testid="approval-rule-folder"]')?.textContent ?? null,
    );
    expect(folders).toEqual(['in /home/you/projects/vigil', 'in the workspace', null]);
  });
});

describe('the sandbox, pure', () => {
  it('words a missing problem and never doubles the full stop', () => {
    expect(sandboxStatus({ ...MISSING, problem: undefined }).headline).toBe(
      'The sandbox is unavailable: bubblewrap cannot start here.',
    );
    expect(sandboxStatus({ ...MISSING, problem: 'no user namespaces.' }).headline).toBe('The sandbox is unavailable: no user namespaces.');
  });

  it('checks a typed folder and edits the list', () => {
    expect(addFolder([], '')).toEqual({ error: expect.stringMatching(/full path/) });
    expect(addFolder([], '~/.npm')).toEqual({ error: 'Write ~/.npm from the root, like /home/you/.npm.' });
    expect(addFolder(['/a'], '/a/')).toEqual({ error: '/a is already writable.' });
    expect(addFolder(['/a'], '/b')).toEqual({ folders: ['/a', '/b'] });
    expect(addFolder([], '/')).toEqual({ folders: ['/'] });
    expect(removeFolder(['/a', '/b'], '/a')).toEqual(['/b']);
  });
});
