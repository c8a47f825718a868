// The Processes panel as the window mounts it: each fact about a process in one place. Its
// row says what it is (state, command, how long it ran, who started it, where, how it
// ended); the selected one's terminal pane adds only what a row cannot — its pid, Kill, and
// the terminal itself.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, tick, unmount } from 'svelte';
import type { EventEnvelope, Op, ProcessSummary, SessionSummary } from '../lib/protocol';
import { proc, started } from './testing';

const ipc = vi.hoisted(() => ({
  handler: null as ((e: EventEnvelope) => void) | null,
  submitted: [] as Op[],
}));

vi.mock('../lib/ipc', () => ({
  startStore: async (_command: string, apply: (list: ProcessSummary[]) => void, h: (e: EventEnvelope) => void) => {
    ipc.handler = h;
    apply([]);
    return { unlisten: () => (ipc.handler = null), error: null };
  },
  processOutput: async (_id: string) => '',
  submit: async (op: Op) => {
    ipc.submitted.push(op);
  },
  toCommandError: (e: unknown) => ({ code: 'unknown', message: String(e) }),
}));

// xterm needs a real layout; what the terminal shows is TerminalView's own business.
vi.mock('./TerminalView.svelte', () => ({ default: () => {} }));

const { ProcessesStore } = await import('./processes.svelte');
const { default: ProcessesPanel } = await import('./ProcessesPanel.svelte');

const sessions: SessionSummary[] = [{ id: 'main', title: 'Site redesign', created_at: 0, updated_at: 0, continuations: 0 }];

/** The agent's dev server, still running. */
const server = proc('aaaa1111', {
  owner: 'main',
  command: 'npm run dev -- --port 5173',
  cwd: '/srv/site',
  pid: 4242,
  started_at: 1_000,
});

/** The user's build, which failed after 12 s. */
const build = proc('bbbb2222', {
  owner: 'user',
  command: 'cargo build --release',
  cwd: '/srv/vigil',
  pid: 4343,
  state: 'exited',
  started_at: 2_000,
  ended_at: 14_000,
  exit_code: 2,
});

let mounted: Record<string, unknown>[] = [];

beforeEach(() => {
  ipc.submitted = [];
  // jsdom lays nothing out, so it has no scrolling either.
  Element.prototype.scrollIntoView ??= () => {};
});

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

/** The panel with `server` and `build` listed and `selectedId` selected. */
async function panel(selectedId: string): Promise<{ root: HTMLElement; row: HTMLElement; detail: HTMLElement }> {
  const store = new ProcessesStore();
  await store.start();
  for (const p of [server, build]) ipc.handler?.(started(p));
  store.selected = selectedId;
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(
    mount(ProcessesPanel, { target, props: { store, sessions, available: 1400, reserved: 260, onClose: () => {} } }),
  );
  flushSync();
  await tick();
  const row = target.querySelector<HTMLElement>(`[data-testid="process-item"][data-process-id="${selectedId}"]`);
  const detail = target.querySelector<HTMLElement>('section[aria-label="Terminal"]');
  if (!row || !detail) throw new Error('the row and the terminal pane are shown');
  return { root: target, row, detail };
}

/** How often `needle` occurs in `el`'s text. */
const times = (el: HTMLElement, needle: string) => (el.textContent ?? '').split(needle).length - 1;

describe('the Processes panel', () => {
  it("shows each fact of the selected process once, in its row; the terminal pane adds only its pid", async () => {
    const { root, row, detail } = await panel(build.id);
    for (const fact of ['cargo build --release', '/srv/vigil', 'you', '12 s', 'exit 2']) {
      expect(times(row, fact), `the row shows ${fact}`).toBe(1);
      expect(times(root, fact), `${fact} is shown once`).toBe(1);
    }
    expect(row.querySelector('.state-badge')?.textContent).toBe('exited');
    expect([...root.querySelectorAll('.state-badge')].map((b) => b.textContent)).toEqual(['exited', 'running']);
    expect(row.getAttribute('aria-current')).toBe('true');
    // What the row cannot show: the pid, and Kill (off: it has ended).
    expect(times(detail, 'pid 4343')).toBe(1);
    expect(times(row, '4343')).toBe(0);
    const kill = detail.querySelector<HTMLButtonElement>('[data-testid="process-kill"]');
    expect(kill?.disabled).toBe(true);
  });

  it("keeps a running process's Kill beside its terminal, and Kill asks the core to kill that process", async () => {
    const { root, row, detail } = await panel(server.id);
    for (const fact of ['npm run dev -- --port 5173', '/srv/site', 'Site redesign']) {
      expect(times(row, fact), `the row shows ${fact}`).toBe(1);
      expect(times(root, fact), `${fact} is shown once`).toBe(1);
    }
    expect(times(root, 'running')).toBe(2); // the header's "1 running" and the row's badge
    expect(times(detail, 'pid 4242')).toBe(1);
    const kill = detail.querySelector<HTMLButtonElement>('[data-testid="process-kill"]');
    expect(kill?.disabled).toBe(false);
    kill?.click();
    await tick();
    expect(ipc.submitted).toEqual([{ type: 'process_kill', process_id: server.id }]);
  });
});
