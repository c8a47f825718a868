// "Check now" (issue 20 item 8): the answer line from the click to the heartbeat's final word,
// which is shown when all is well too; the store's manual wake; the button in the status
// bar's heartbeat popover and in the Routines pane, answered in both.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import type { EventEnvelope, HeartbeatView, Op, RoutinesView } from '../lib/protocol';
import { ev } from '../chat/testing';
import { shortTime } from '../lib/time';
import { CHECKING, IDLE, withCheckEvent, type CheckState } from './check';

const ipc = vi.hoisted(() => ({
  handler: null as ((e: EventEnvelope) => void) | null,
  submitted: [] as Op[],
  refused: null as string | null,
}));

vi.mock('../lib/ipc', () => ({
  startStore: async (_command: string, apply: (v: unknown) => void, h: (e: EventEnvelope) => void) => {
    ipc.handler = h;
    apply(view());
    return { unlisten: () => (ipc.handler = null), error: null };
  },
  heartbeatView: async () => view(),
  listRoutines: async (): Promise<RoutinesView> => ({ status: 'ok', error: null, routines: [] }) as unknown as RoutinesView,
  heartbeatChecks: async () => ({ text: '', effectively_empty: true }),
  submit: async (op: Op) => {
    if (ipc.refused) throw new Error(ipc.refused);
    ipc.submitted.push(op);
  },
  toCommandError: (e: unknown) => ({ code: 'unknown', message: e instanceof Error ? e.message : String(e) }),
}));

const { HeartbeatStore } = await import('./heartbeat.svelte');
const { RoutinesStore } = await import('../routines/routines.svelte');
const HeartbeatIndicator = (await import('./HeartbeatIndicator.svelte')).default;
const RoutinesPane = (await import('../routines/RoutinesPane.svelte')).default;

function view(): HeartbeatView {
  return {
    settings: { enabled: true, every: '30m', ackMaxChars: 300, notifications: true, dailyTokenBudget: 0, idleAfterHours: 8, reflectionEveryHours: 24, reflectionAddsRoutines: false, runTimeoutMinutes: 10 },
    interval_ms: 30 * 60_000,
    last_run_at: null,
    last_reason: null,
    last_status: null,
    last_skip_reason: null,
    last_detail: null,
    last_usage: null,
    next_run_at: null,
    warnings: [],
    stats: { runs: 0, sent: 0, suppressed: 0, failed: 0, skipped: {}, wakes_requested: 0, wakes_coalesced: 0 },
    paused: false,
    usage_today: { input_tokens: 0, output_tokens: 0 },
    runs_today: 0,
    budget_spent: false,
    idle_factor: 1,
  };
}

const AT = Date.UTC(2026, 4, 1, 10, 42);
/** Locale-free "HH:MM" in UTC. */
const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);

type Beat = Extract<EventEnvelope, { type: 'heartbeat' }>;
function beat(patch: Partial<Beat>): EventEnvelope {
  const e = ev({ type: 'heartbeat', reason: 'manual', status: 'ok-token', ...patch } as Beat, null, 'heartbeat_session_main');
  return { ...e, ts: AT };
}

const after = (state: CheckState, ...events: EventEnvelope[]) => events.reduce((s, e) => withCheckEvent(s, e, clock), state);

describe('the answer to Check now', () => {
  it('says all is well, with the time, instead of saying nothing', () => {
    expect(after(CHECKING, beat({ status: 'ok-token' }))).toEqual({ phase: 'done', text: 'All clear at 10:42', tone: 'ok' });
    expect(after(CHECKING, beat({ status: 'ok-empty' })).text).toBe('All clear at 10:42');
    expect(after(CHECKING, beat({ status: 'sent' }))).toEqual({
      phase: 'done',
      text: 'Found something at 10:42 — it is in the conversation',
      tone: 'info',
    });
  });

  it('waits on through a busy conversation, a taken lock and a provider error that is retried', () => {
    const busy = after(CHECKING, beat({ status: 'skipped', skip_reason: 'requests-in-flight', retrying: true }));
    expect(busy).toEqual({ phase: 'checking', text: 'Checking after the running turn finishes…', tone: 'info' });
    const locked = after(busy, beat({ reason: 'retry', status: 'skipped', skip_reason: 'lock', retrying: true }));
    expect(locked.text).toBe('Another heartbeat run is in progress; checking after it…');
    const failing = after(locked, beat({ reason: 'retry', status: 'failed', detail: '500 (retry 1 of 3)', retrying: true }));
    expect(failing).toEqual({ phase: 'checking', text: 'The provider did not answer; trying again…', tone: 'info' });
    expect(after(failing, beat({ reason: 'retry', status: 'ok-token' })).text).toBe('All clear at 10:42');
  });

  it('ends with what went wrong when the last try fails or the run cannot happen', () => {
    expect(after(CHECKING, beat({ status: 'failed', detail: 'Server error 500: the model is on fire' }))).toEqual({
      phase: 'done',
      text: 'Check failed at 10:42: Server error 500: the model is on fire',
      tone: 'danger',
    });
    expect(after(CHECKING, beat({ status: 'timed-out', detail: 'timed out after 10 min (the heartbeat’s run limit)' }))).toEqual({
      phase: 'done',
      text: 'Check ended at 10:42: timed out after 10 min (the heartbeat’s run limit)',
      tone: 'warn',
    });
    expect(after(CHECKING, beat({ status: 'skipped', skip_reason: 'paused' }))).toEqual({
      phase: 'done',
      text: 'Not checked at 10:42: background activity is paused (tray menu)',
      tone: 'warn',
    });
    expect(after(CHECKING, beat({ status: 'skipped', skip_reason: 'duplicate' })).text).toBe('Nothing new at 10:42');
  });

  it('is not moved by heartbeats nobody asked about', () => {
    expect(after(IDLE, beat({ status: 'sent' }))).toBe(IDLE);
    const done = after(CHECKING, beat({ status: 'ok-token' }));
    expect(after(done, beat({ reason: 'interval', status: 'failed', detail: 'x' }))).toBe(done);
  });
});

let mounted: Record<string, unknown>[] = [];

beforeEach(() => {
  ipc.handler = null;
  ipc.submitted = [];
  ipc.refused = null;
});

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

async function startedStore() {
  const store = new HeartbeatStore();
  await store.start();
  return store;
}

const byTestId = (id: string) => document.querySelector<HTMLElement>(`[data-testid="${id}"]`);

describe('Check now in the window', () => {
  it('asks for a manual wake once and shows its answer', async () => {
    const store = await startedStore();
    await store.checkNow();
    await store.checkNow();
    expect(ipc.submitted).toEqual([{ type: 'wake', reason: 'manual' }]);
    expect(store.check).toEqual(CHECKING);
    ipc.handler?.(beat({ status: 'ok-token' }));
    expect(store.check).toEqual({ phase: 'done', text: `All clear at ${shortTime(AT)}`, tone: 'ok' });
  });

  it('says so when the wake cannot even be asked for', async () => {
    const store = await startedStore();
    ipc.refused = 'Vigil is shutting down';
    await store.checkNow();
    expect(store.check).toEqual({ phase: 'done', text: 'Could not ask for a check: Vigil is shutting down', tone: 'danger' });
  });

  it('is in the status bar heartbeat item, which says "checking…" until the answer', async () => {
    const store = await startedStore();
    const target = document.createElement('div');
    document.body.append(target);
    mounted.push(mount(HeartbeatIndicator, { target, props: { store, onOpenSettings: () => {} } }));
    byTestId('heartbeat-status')!.click();
    flushSync();
    const button = byTestId('heartbeat-check-button') as HTMLButtonElement;
    expect(button.textContent).toBe('Check now');
    button.click();
    await Promise.resolve();
    flushSync();
    expect(ipc.submitted).toEqual([{ type: 'wake', reason: 'manual' }]);
    expect(byTestId('heartbeat-status')!.textContent).toContain('Heartbeat: checking…');
    expect(byTestId('heartbeat-check-result')!.textContent).toBe('Checking…');
    expect((byTestId('heartbeat-check-button') as HTMLButtonElement).disabled).toBe(true);
    ipc.handler?.(beat({ status: 'ok-token' }));
    flushSync();
    expect(byTestId('heartbeat-check-result')!.textContent).toBe(`All clear at ${shortTime(AT)}`);
    expect(byTestId('heartbeat-status')!.textContent).not.toContain('checking');
    expect((byTestId('heartbeat-check-button') as HTMLButtonElement).disabled).toBe(false);
  });

  it('is in the Routines pane too, answered there for a check started anywhere', async () => {
    const store = await startedStore();
    const routines = new RoutinesStore();
    const target = document.createElement('div');
    document.body.append(target);
    mounted.push(mount(RoutinesPane, { target, props: { store: routines, heartbeat: store, onClose: () => {} } }));
    flushSync();
    expect(byTestId('routines-check-result')!.textContent).toBe('');
    byTestId('routines-check-button')!.click();
    await Promise.resolve();
    flushSync();
    expect(ipc.submitted).toEqual([{ type: 'wake', reason: 'manual' }]);
    ipc.handler?.(beat({ status: 'skipped', skip_reason: 'requests-in-flight', retrying: true }));
    flushSync();
    expect(byTestId('routines-check-result')!.textContent).toBe('Checking after the running turn finishes…');
    ipc.handler?.(beat({ reason: 'retry', status: 'sent' }));
    flushSync();
    expect(byTestId('routines-check-result')!.textContent).toBe(
      `Found something at ${shortTime(AT)} — it is in the conversation`,
    );
  });
});
