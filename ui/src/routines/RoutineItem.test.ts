// A routine's run history as the user unfolds it: due times missed while the computer slept
// are there (several in one line), and a run cut off after it changed something (outcome
// unknown) offers Retry and Dismiss, which reach the store with the run's id, once answered
// they are gone. The editor offers the catch-up policy.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, tick, unmount } from 'svelte';
import type { RoutineRun, RoutineView } from '../lib/protocol';
import RoutineItem from './RoutineItem.svelte';
import { routineView } from './testing';

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

const T = Date.UTC(2026, 1, 12, 8, 0); // Thu 12 Feb 2026, 08:00 UTC
const HOUR = 3_600_000;

const routine = (over: Partial<RoutineView> = {}): RoutineView =>
  routineView({
    id: 'deploy',
    title: 'Deploy the site',
    schedule: '0 * * * *',
    next_run_at: T + 10 * HOUR,
    schedule_description: 'every hour at :00, UTC',
    unknown_run: 'r9',
    ...over,
  });

const run = (over: Partial<RoutineRun>): RoutineRun => ({
  run_id: 'r',
  routine_id: 'deploy',
  mode: 'isolated',
  due_at: T,
  started_at: T,
  finished_at: T,
  outcome: 'ok',
  session_id: null,
  summary: null,
  error: null,
  deterministic: false,
  due_count: 1,
  ...over,
});

const history: RoutineRun[] = [
  run({ run_id: 'r1', outcome: 'missed', due_count: 3, last_due_at: T + 2 * HOUR, error: 'due 3 times while Vigil could not run it' }),
  run({
    run_id: 'r9',
    outcome: 'unknown',
    due_at: T + 3 * HOUR,
    finished_at: T + 3 * HOUR,
    side_effect: 'exec: make deploy',
    error: 'interrupted',
    usage: { input_tokens: 3_180, output_tokens: 30, cache_read_tokens: 2_900, cost_micro_usd: 400 },
  }),
];

async function show(r: RoutineView, props: Record<string, unknown> = {}): Promise<HTMLElement> {
  const target = document.createElement('ul');
  document.body.append(target);
  mounted.push(
    mount(RoutineItem, {
      target,
      props: {
        routine: r,
        loadRuns: () => Promise.resolve(history),
        onEdit: () => {},
        onRunNow: () => {},
        onToggle: () => {},
        onRemove: () => {},
        onRetryRun: () => {},
        onDismissRun: () => {},
        ...props,
      },
    }),
  );
  flushSync();
  // Unfolded as the user does: the history is asked for then.
  target.querySelector<HTMLButtonElement>('button[aria-controls]')?.click();
  flushSync();
  await Promise.resolve();
  await tick();
  return target;
}

const all = (root: HTMLElement, id: string) => [...root.querySelectorAll<HTMLElement>(`[data-testid="${id}"]`)];
const q = (root: HTMLElement, id: string) => root.querySelector<HTMLElement>(`[data-testid="${id}"]`);

describe('a routine’s run history', () => {
  it('lists the missed due times in one line and says the policy on the row', async () => {
    const item = await show(routine());
    const rows = all(item, 'routine-run');
    expect(rows.map((r) => r.dataset.outcome)).toEqual(['unknown', 'missed']);
    expect(rows[1].textContent).toContain('Missed');
    expect(rows[1].textContent).toContain('3 due times, Thu 12 Feb, 08:00 – Thu 12 Feb, 10:00');
    // What the run's model turn used is on its line; the missed due times used nothing.
    expect(all(rows[0], 'routine-run-tokens').map((t) => t.textContent)).toEqual(['3,210 tokens (2,900 cached) · $0.0004']);
    expect(all(rows[1], 'routine-run-tokens')).toEqual([]);
    expect(q(item, 'routine-catch-up-label')?.textContent).toBe(' · skips missed times');
  });

  it('offers Retry and Dismiss on the cut-off run, with what it had started to do', async () => {
    const onRetryRun = vi.fn();
    const onDismissRun = vi.fn();
    const item = await show(routine(), { onRetryRun, onDismissRun });
    const rows = all(item, 'routine-run');
    expect(rows[0].textContent).toContain('Outcome unknown');
    expect(rows[0].textContent).toContain('(exec: make deploy)');
    q(item, 'routine-run-retry')?.click();
    expect(onRetryRun).toHaveBeenCalledWith('r9');
    q(item, 'routine-run-dismiss')?.click();
    expect(onDismissRun).toHaveBeenCalledWith('r9');
    expect(all(item, 'routine-run-retry')).toHaveLength(1);
  });

  it('shows what set a fired run off, folded, as text', async () => {
    const fired = run({
      run_id: 'f1',
      outcome: 'ok',
      evidence: 'Output of process 0a1b2c3d matched:\nGET / 200\nERROR db timeout <img src=x>',
    });
    const item = await show(routine({ unknown_run: null }), { loadRuns: () => Promise.resolve([fired]) });
    const shown = all(item, 'routine-run-evidence');
    expect(shown).toHaveLength(1);
    expect(shown[0].textContent).toContain('ERROR db timeout <img src=x>');
    expect(shown[0].querySelector('img')).toBeNull();
    expect(all(item, 'routine-run')[0].textContent).toContain('What set it off');
  });

  it('a check line of the checklist is changed in HEARTBEAT.md, not with the routine buttons', async () => {
    const item = await show(routine({ id: 'checklist-0a1b2c3d4e', unknown_run: null }));
    expect(q(item, 'routine-checklist-note')?.textContent).toContain('HEARTBEAT.md checklist');
    for (const id of ['routine-run-now', 'routine-edit', 'routine-remove', 'routine-toggle-enabled']) expect(q(item, id)).toBeNull();
    const plain = await show(routine({ unknown_run: null }));
    expect(q(plain, 'routine-checklist-note')).toBeNull();
    expect(q(plain, 'routine-edit')).not.toBeNull();
  });

  it('while HEARTBEAT.md is held, no button offers what the core would refuse, and no next run is promised', async () => {
    const buttons = ['routine-run-now', 'routine-toggle-enabled', 'routine-edit', 'routine-remove'];
    const due = routine({ unknown_run: null, next_runs: [T + HOUR, T + 2 * HOUR] });
    const held = await show(due, { held: true });
    for (const id of buttons) {
      const b = q(held, id) as HTMLButtonElement;
      expect(b.disabled, id).toBe(true);
      expect(b.title, id).toContain('trust HEARTBEAT.md');
    }
    expect(q(held, 'routine-next-runs')).toBeNull();
    expect(q(held, 'routine-state')?.textContent).toBe('Waiting for Trust');

    const trusted = await show(due);
    for (const id of buttons) expect((q(trusted, id) as HTMLButtonElement).disabled, id).toBe(false);
    expect(q(trusted, 'routine-next-runs')?.textContent).toContain('Next:');
  });

  it('"Open transcript" opens the session the run recorded, and only a run that has one offers it', async () => {
    const onOpenTranscript = vi.fn();
    const runs = [
      run({ run_id: 'j1', session_id: 'job_deploy_j1', summary: 'Deployed.' }),
      run({ run_id: 'm1', outcome: 'missed', error: 'due while Vigil could not run it' }),
      run({ run_id: 'j2', session_id: 'job_deploy_j2', summary: 'Deployed again.' }),
    ];
    const item = await show(routine({ unknown_run: null }), { loadRuns: () => Promise.resolve(runs), onOpenTranscript });
    const rows = all(item, 'routine-run');
    expect(rows.map((r) => all(r, 'routine-run-transcript').length)).toEqual([1, 0, 1]);
    q(rows[2], 'routine-run-transcript')?.click();
    expect(onOpenTranscript).toHaveBeenCalledWith('job_deploy_j1');
    q(rows[0], 'routine-run-transcript')?.click();
    expect(onOpenTranscript).toHaveBeenLastCalledWith('job_deploy_j2');
    expect(onOpenTranscript).toHaveBeenCalledTimes(2);
  });

  it('once answered, the buttons are gone', async () => {
    const item = await show(routine({ unknown_run: null }));
    expect(all(item, 'routine-run')).toHaveLength(2);
    expect(q(item, 'routine-run-retry')).toBeNull();
    expect(q(item, 'routine-run-dismiss')).toBeNull();
  });
});

describe('a routine woken by a trigger', () => {
  const watched = (over: Partial<RoutineView> = {}) =>
    routine({
      unknown_run: null,
      schedule: null,
      trigger: { kind: 'file', paths: ['logs/'] },
      check: { command: 'grep -c ERROR logs/app.log', when: '> 0' },
      action: 'notify',
      watch: {
        summary: 'Watching `logs/`',
        approved: true,
        approval_text: 'Runs `grep -c ERROR logs/app.log` (acts when: > 0)\nAccess: read-only sandbox, nothing writable, no network',
        fired_today: 3,
        last_fired_at: Date.UTC(2026, 1, 12, 10, 42),
        last_evidence: 'ERROR db timeout',
        paused: null,
      },
      ...over,
    });

  it('says what it watches, how often it fired today and what it fired on last', async () => {
    const item = await show(watched());
    expect(q(item, 'routine-trigger')?.textContent).toBe('Watching `logs/` · fired 3× today · last 10:42 — ERROR db timeout');
    expect(q(item, 'routine-check')?.textContent).toBe('Check: grep -c ERROR logs/app.log (acts when > 0) · notifies you, no model');
    expect(q(item, 'routine-approval')).toBeNull();
  });

  it('until approved shows what it would run, with what access, and Approve reaches the store', async () => {
    const onApprove = vi.fn();
    const w = watched().watch!;
    const item = await show(watched({ watch: { ...w, approved: false } }), { onApprove });
    expect(q(item, 'routine-approval-text')?.textContent).toContain('grep -c ERROR logs/app.log');
    expect(q(item, 'routine-approval-text')?.textContent).toContain('no network');
    q(item, 'routine-approve')?.click();
    expect(onApprove).toHaveBeenCalledOnce();
  });

  it('one whose fires are turns in a conversation names that conversation, and only that one', async () => {
    const inline = await show(watched({ execution_mode: 'inline', action: 'agent', runs_in: 'Notes chat' }));
    expect(q(inline, 'routine-runs-in')?.textContent).toBe('in: Notes chat');
    const job = await show(watched());
    expect(q(job, 'routine-runs-in')).toBeNull();
  });
});
