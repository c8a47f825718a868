// Settings → Approvals, mounted as the settings pane mounts it, against a stand-in for the
// Rust commands: the sandbox's state in words, the two network switches, the extra writable
// folders (add by a full path, remove) and the paths hidden from commands (edit, save,
// restore defaults), with refusals shown where they belong.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, tick, unmount } from 'svelte';
import type { ApprovalsView, SandboxView } from '../lib/protocol';
import { addFolder, addSocket, hiddenLines, hiddenSlip, networkStatus, sandboxStatus } from './sandbox';

const backend = vi.hoisted(() => ({
  view: null as unknown as ApprovalsView,
  calls: [] as [string, unknown][],
  failNext: null as { code: string; message: string; field?: string } | null,
  routines: [] as { id: string; title: string; execution_mode: string; removed_at: number | null }[],
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
    setSandboxUnattendedNetwork: (on: boolean) =>
      answer('set_sandbox_unattended_network', on, () => (backend.view.sandbox.unattended_network = on)),
    // Tidies as the core does the one way these tests need: a trailing slash goes.
    setSandboxHidden: (hidden: string[]) =>
      answer('set_sandbox_hidden', hidden, () => (backend.view.sandbox.hidden = hidden.map((h) => h.replace(/\/+$/, '')))),
    setSandboxSockets: (sockets: string[]) =>
      answer('set_sandbox_sockets', sockets, () => (backend.view.sandbox.sockets = [...sockets])),
    listRoutines: () => Promise.resolve({ routines: structuredClone(backend.routines) }),
    setRoutineNetwork: (id: string, on: boolean) =>
      answer('set_routine_network', [id, on], () => {
        const kept = backend.view.sandbox.network_routines.filter((r) => r !== id);
        backend.view.sandbox.network_routines = on ? [...kept, id] : kept;
      }),
    toCommandError: (e: { code: string; message: string }) => e,
    PRIMARY_SESSION: 'main',
  };
});

const { default: ApprovalSettings } = await import('./ApprovalSettings.svelte');

const DEFAULTS = ['~/.ssh', '~/.gnupg', '~/.aws'];
const READY: SandboxView = {
  available: true,
  network_routines: [],
  sockets: [],
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
  backend.routines = [];
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

describe('the network switches in Settings → Approvals', () => {
  const label = (box: HTMLInputElement) => box.closest('label')?.querySelector('.label')?.textContent;

  it('shows the user’s turns and the runs nobody watches as two switches, unattended off', async () => {
    const pane = await show();
    const own = q<HTMLInputElement>(pane, 'settings-sandbox-network')!;
    const unattended = q<HTMLInputElement>(pane, 'settings-sandbox-unattended-network')!;
    expect(label(own)).toBe('Your own turns’ commands may use the network');
    expect(label(unattended)).toBe('Runs nobody watches may use the network (heartbeat, routines, continuations)');
    expect([own.checked, unattended.checked]).toEqual([true, false]);
    expect(q(pane, 'settings-sandbox-unattended-warning')?.textContent).toMatch(/send your files away, with nobody there to stop it/);
    expect(q(pane, 'settings-sandbox-network-problem')).toBeNull();
  });

  it('switches the runs nobody watches on through the core, leaving the user’s own switch alone', async () => {
    const pane = await show();
    const unattended = q<HTMLInputElement>(pane, 'settings-sandbox-unattended-network')!;
    unattended.click();
    await settle();
    expect(backend.calls).toEqual([['set_sandbox_unattended_network', true]]);
    expect(backend.view.sandbox).toMatchObject({ network: true, unattended_network: true });
    expect(unattended.checked).toBe(true);
    expect(q<HTMLInputElement>(pane, 'settings-sandbox-network')!.checked).toBe(true);
  });

  it('puts the unattended switch back and says so when it is not saved', async () => {
    const pane = await show();
    backend.failNext = { code: 'storage', message: 'disk full' };
    const unattended = q<HTMLInputElement>(pane, 'settings-sandbox-unattended-network')!;
    unattended.click();
    await settle();
    expect(unattended.checked).toBe(false);
    expect(q(pane, 'settings-sandbox-error')?.textContent).toBe('The network setting was not changed: disk full');
  });

  it('lists the routines that run as jobs, each with its own network grant, while runs nobody watches have none', async () => {
    backend.routines = [
      { id: 'server_check', title: 'Server check', execution_mode: 'isolated', removed_at: null },
      { id: 'standup', title: 'Stand-up reminder', execution_mode: 'inline', removed_at: null },
      { id: 'old_job', title: 'Old job', execution_mode: 'isolated', removed_at: 1 },
    ];
    const pane = await show();
    const items = [...pane.querySelectorAll<HTMLInputElement>('[data-testid="settings-routine-network-item"]')];
    expect(items.map((i) => i.closest('label')?.textContent?.trim())).toEqual(['Server check']);
    expect(items[0].checked).toBe(false);
    items[0].click();
    await settle();
    expect(backend.calls).toEqual([['set_routine_network', ['server_check', true]]]);
    expect(backend.view.sandbox.network_routines).toEqual(['server_check']);
    expect(items[0].checked).toBe(true);
    // Every run nobody watches has the network: nothing left to grant one by one.
    q<HTMLInputElement>(pane, 'settings-sandbox-unattended-network')!.click();
    await settle();
    expect(q(pane, 'settings-routine-network')).toBeNull();
  });

  it('grants a socket by its full path, with the warning it deserves, and takes it back', async () => {
    const pane = await show();
    expect(q(pane, 'settings-sandbox-sockets-empty')?.textContent).toMatch(/no command reaches a socket/);
    expect(q(pane, 'settings-sandbox-sockets')?.textContent).toMatch(/docker.sock a command can start a container/);
    const input = q<HTMLInputElement>(pane, 'settings-sandbox-socket-input')!;
    input.value = 'docker.sock';
    input.dispatchEvent(new Event('input'));
    q<HTMLFormElement>(pane, 'settings-sandbox-sockets')!.requestSubmit();
    await settle();
    expect(backend.calls).toEqual([]);
    expect(q(pane, 'settings-sandbox-socket-error')?.textContent).toMatch(/not a full path/);
    input.value = '/run/docker.sock';
    input.dispatchEvent(new Event('input'));
    q<HTMLFormElement>(pane, 'settings-sandbox-sockets')!.requestSubmit();
    await settle();
    expect(backend.calls).toEqual([['set_sandbox_sockets', ['/run/docker.sock']]]);
    const row = q(pane, 'settings-sandbox-socket')!;
    expect(row.dataset.socket).toBe('/run/docker.sock');
    row.querySelector('button')!.click();
    await settle();
    expect(backend.view.sandbox.sockets).toEqual([]);
  });

  it('says when no command can have a network here, whatever the switches say', async () => {
    backend.view.sandbox = {
      ...structuredClone(READY),
      network_available: false,
      network_problem: 'Commands get no network, even where it is allowed: slirp4netns is not installed; install the `slirp4netns` package',
    };
    const pane = await show();
    const problem = q(pane, 'settings-sandbox-network-problem')!;
    expect(problem.textContent).toBe(
      'Commands get no network, even where it is allowed: slirp4netns is not installed; install the slirp4netns package.',
    );
    expect(problem.querySelector('code')?.textContent).toBe('slirp4netns');
  });
});

describe('the paths hidden from commands in Settings → Approvals', () => {
  const box = (pane: HTMLElement) => q<HTMLTextAreaElement>(pane, 'settings-sandbox-hidden-text')!;

  async function edit(pane: HTMLElement, text: string): Promise<void> {
    box(pane).value = text;
    box(pane).dispatchEvent(new Event('input', { bubbles: true }));
    flushSync();
  }

  async function submit(pane: HTMLElement): Promise<void> {
    q<HTMLFormElement>(pane, 'settings-sandbox-hidden')!.dispatchEvent(new Event('submit', { bubbles: true, cancelable: true }));
    await settle();
  }

  it('shows the list one path per line and says what hiding does', async () => {
    const pane = await show();
    expect(box(pane).value).toBe('~/.ssh\n~/.gnupg\n~/.aws');
    expect(q(pane, 'settings-sandbox-hidden-note')?.textContent).toMatch(/appear empty to every command/);
    expect(q<HTMLButtonElement>(pane, 'settings-sandbox-hidden-save')!.disabled).toBe(true);
    expect(q<HTMLButtonElement>(pane, 'settings-sandbox-hidden-defaults')!.disabled).toBe(true);
    expect(q(pane, 'settings-sandbox-hidden-empty')).toBeNull();
  });

  it('saves the edited lines and shows what the core kept', async () => {
    const pane = await show();
    await edit(pane, '~/.ssh\n\n  ~/.kube/ \n/srv/secrets');
    expect(q(pane, 'settings-sandbox-hidden-unsaved')?.textContent).toBe('Not saved yet');
    await submit(pane);
    expect(backend.calls).toEqual([['set_sandbox_hidden', ['~/.ssh', '~/.kube/', '/srv/secrets']]]);
    expect(box(pane).value).toBe('~/.ssh\n~/.kube\n/srv/secrets');
    expect(q(pane, 'settings-sandbox-hidden-unsaved')).toBeNull();
    // Defaults can come back now.
    expect(q<HTMLButtonElement>(pane, 'settings-sandbox-hidden-defaults')!.disabled).toBe(false);
  });

  it('refuses a relative path before asking the core, and shows the core’s refusal', async () => {
    const pane = await show();
    await edit(pane, '~/.ssh\n.aws');
    await submit(pane);
    expect(backend.calls).toEqual([]);
    expect(q(pane, 'settings-sandbox-hidden-error')?.textContent).toBe('.aws is neither in your home (~/…) nor a full path (/…)');
    expect(box(pane).getAttribute('aria-invalid')).toBe('true');

    backend.failNext = { code: 'invalid_path', field: 'hidden', message: '~bob/.ssh names another user’s home; write it as a full path' };
    await edit(pane, '~/.ssh\n/ok');
    expect(q(pane, 'settings-sandbox-hidden-error')).toBeNull();
    await submit(pane);
    expect(q(pane, 'settings-sandbox-hidden-error')?.textContent).toMatch(/another user’s home/);
    // Nothing was saved, and what was typed stays for correcting.
    expect(backend.view.sandbox.hidden).toEqual(DEFAULTS);
    expect(box(pane).value).toBe('~/.ssh\n/ok');
  });

  it('saves an empty list, warns that nothing is hidden, and restores the defaults', async () => {
    const pane = await show();
    await edit(pane, '');
    await submit(pane);
    expect(backend.calls).toEqual([['set_sandbox_hidden', []]]);
    expect(q(pane, 'settings-sandbox-hidden-empty')?.textContent).toBe(
      'Nothing is hidden: commands can read ~/.ssh, ~/.aws and every other secret in your home.',
    );

    q<HTMLButtonElement>(pane, 'settings-sandbox-hidden-defaults')!.click();
    await settle();
    expect(backend.calls.at(-1)).toEqual(['set_sandbox_hidden', DEFAULTS]);
    expect(box(pane).value).toBe(DEFAULTS.join('\n'));
    expect(q(pane, 'settings-sandbox-hidden-empty')).toBeNull();
    expect(q<HTMLButtonElement>(pane, 'settings-sandbox-hidden-defaults')!.disabled).toBe(true);
  });

  it('keeps what is being typed when another setting reloads the view', async () => {
    const pane = await show();
    await edit(pane, '~/.ssh\n/typing');
    q<HTMLInputElement>(pane, 'settings-sandbox-unattended-network')!.click();
    await settle();
    expect(box(pane).value).toBe('~/.ssh\n/typing');
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

  it('reads the hidden list from its text box and catches a typing slip', () => {
    expect(hiddenLines(' ~/.ssh \n\n/srv/x\n')).toEqual(['~/.ssh', '/srv/x']);
    expect(hiddenSlip(['~/.ssh', '/srv/x'])).toBeNull();
    expect(hiddenSlip(['~/.ssh', 'notes'])).toBe('notes is neither in your home (~/…) nor a full path (/…)');
    expect(hiddenSlip(['~/a/../.ssh'])).toBe('~/a/../.ssh contains “..”; write the path without it');
  });

  it('words a missing network helper as one sentence', () => {
    expect(networkStatus(READY)).toBeNull();
    expect(networkStatus({ ...READY, network_available: false })).toBe(
      'Commands get no network: slirp4netns, which gives them one, is not installed.',
    );
  });

  it('checks a typed folder or socket before the list is saved', () => {
    expect(addFolder([], '')).toEqual({ error: expect.stringMatching(/full path/) });
    expect(addFolder([], '~/.npm')).toEqual({ error: 'Write ~/.npm from the root, like /home/you/.npm.' });
    expect(addFolder(['/a'], '/a/')).toEqual({ error: '/a is already writable.' });
    expect(addFolder(['/a'], '/b')).toEqual({ paths: ['/a', '/b'] });
    expect(addFolder([], '/')).toEqual({ paths: ['/'] });
    expect(addSocket([], 'docker.sock')).toEqual({ error: expect.stringMatching(/not a full path/) });
    expect(addSocket(['/a.sock'], ' /run/docker.sock ')).toEqual({ paths: ['/a.sock', '/run/docker.sock'] });
  });
});
