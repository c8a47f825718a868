// The approval card as the chat mounts it: what runs (the command, its env, its folder, the
// parts of a compound line and which still need the user), why a line could not be
// checked, the warning for a command leaving the sandbox, and text shown as text.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import ApprovalCard from './ApprovalCard.svelte';
import type { Approval } from './state';

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

const base: Approval = {
  id: 'a1',
  sessionId: 'main',
  runId: 'r1',
  kind: 'exec',
  command: 'cargo build --release',
  prefix: 'cargo build',
  cwd: '/home/you/vigil',
  env: [],
  parts: [{ text: 'cargo build --release', covered: false }],
  unprovable: null,
  outsideSandbox: false,
  execRun: null,
  expiresAt: null,
  timedOut: false,
  ts: 1,
  state: 'pending',
  error: null,
};

function show(patch: Partial<Approval>, onAnswer = vi.fn()): HTMLElement {
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(mount(ApprovalCard, { target, props: { approval: { ...base, ...patch }, takeFocus: false, onAnswer } }));
  flushSync();
  return target;
}

const q = (root: HTMLElement, id: string) => root.querySelector(`[data-testid="${id}"]`);
const all = (root: HTMLElement, id: string) => [...root.querySelectorAll(`[data-testid="${id}"]`)];

describe('the approval card', () => {
  it('shows a compound line part by part, each marked allowed or needing the user', () => {
    const card = show({
      command: 'git status && rm -rf build',
      prefix: '',
      parts: [
        { text: 'git status', covered: true },
        { text: 'rm -rf build', covered: false },
      ],
    });
    expect(q(card, 'approval-command')?.textContent).toBe('git status && rm -rf build');
    expect(q(card, 'approval-cwd')?.textContent).toBe('in /home/you/vigil');
    const parts = all(card, 'approval-part');
    expect(parts.map((p) => [p.querySelector('code')?.textContent, p.getAttribute('data-covered'), p.querySelector('.tag')?.textContent])).toEqual([
      ['git status', 'true', 'allowed'],
      ['rm -rf build', 'false', 'needs you'],
    ]);
    // A compound line is approved once; there is nothing to remember.
    expect(q(card, 'approval-always')).toBeNull();
    expect(q(card, 'approval-approve')?.textContent?.trim()).toBe('Run once');
  });

  it('lists no parts for a single command, and offers "always" with what it remembers', () => {
    const card = show({});
    expect(q(card, 'approval-parts')).toBeNull();
    expect(q(card, 'approval-always')?.textContent).toMatch(/Always allow\s+cargo build/);
  });

  it('shows every variable the command is given, as part of what is approved', () => {
    const card = show({ env: ['FOO=1', 'GIT_CONFIG_KEY_0=core.fsmonitor'], prefix: '' });
    expect(q(card, 'approval-env')?.textContent).toMatch(/with these variables set/);
    expect(all(card, 'approval-env-line').map((e) => e.textContent)).toEqual(['FOO=1', 'GIT_CONFIG_KEY_0=core.fsmonitor']);
    expect(q(card, 'approval-always')).toBeNull();
  });

  it('shows no env block and no warning when there is nothing to say', () => {
    const card = show({});
    expect(q(card, 'approval-env')).toBeNull();
    expect(q(card, 'approval-outside-sandbox')).toBeNull();
    expect(q(card, 'approval-unprovable')).toBeNull();
  });

  it('says why a line cannot be checked part by part', () => {
    const card = show({ command: 'ls $(id)', prefix: '', parts: [], unprovable: 'it redirects `> out.txt` (only `/dev/null` and `2>&1` are harmless)' });
    const line = q(card, 'approval-unprovable')!;
    expect(line.textContent).toBe('Vigil cannot check this line part by part: it redirects > out.txt (only /dev/null and 2>&1 are harmless).');
    expect([...line.querySelectorAll('code')].map((c) => c.textContent)).toEqual(['> out.txt', '/dev/null', '2>&1']);
  });

  it('warns clearly when the command would run outside the sandbox', () => {
    const card = show({ outsideSandbox: true, prefix: '' });
    expect(q(card, 'approval-outside-sandbox')?.textContent).toMatch(/Outside the sandbox: this command can change any file you can change/);
    // The warning comes before the command, so it is read first.
    const warning = q(card, 'approval-outside-sandbox')!;
    expect(warning.compareDocumentPosition(q(card, 'approval-command')!) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
  });

  it('says how long the command may run: in the background, until its timeout, or until killed', () => {
    const line = (execRun: Approval['execRun']) => q(show({ execRun }), 'approval-run')?.textContent?.trim();
    expect(line({ background: true, timeout_ms: 1_800_000 })).toBe('runs in the background · stops after 30 min');
    expect(line({ background: true, timeout_ms: null })).toBe('runs in the background · until killed');
    expect(line({ background: false, timeout_ms: 86_400_000 })).toBe('stops after 24 h');
    expect(line({ background: false, timeout_ms: null })).toBe('runs until killed');
    // File access and typing into a process have no run to describe.
    expect(line(null)).toBeUndefined();
  });

  it('titles typing into a process and says what it means; "always" is not offered', () => {
    const card = show({ kind: 'process_input', command: 'python3', prefix: '', parts: [] });
    expect(card.querySelector('h3')?.textContent).toBe('Vigil wants to type into this running command');
    expect(q(card, 'approval-input-note')?.textContent).toMatch(/as its input/);
    expect(q(card, 'approval-approve')?.textContent?.trim()).toBe('Allow once');
    expect(q(card, 'approval-always')).toBeNull();
  });

  it('shows what the agent wrote as text, never as markup', () => {
    const evil = '<img src=x onerror="window.__pwned=1">';
    const card = show({
      command: `echo ${evil}`,
      cwd: `/tmp/${evil}`,
      env: [`X=${evil}`],
      parts: [
        { text: `echo ${evil}`, covered: false },
        { text: '<b>bold</b>', covered: true },
      ],
      unprovable: `it uses ${evil}`,
    });
    expect(card.querySelector('img')).toBeNull();
    expect(card.querySelector('b')).toBeNull();
    expect(q(card, 'approval-command')?.textContent).toBe(`echo ${evil}`);
    expect(all(card, 'approval-env-line')[0].textContent).toBe(`X=${evil}`);
    expect(all(card, 'approval-part')[1].querySelector('code')?.textContent).toBe('<b>bold</b>');
  });

  it('answers with the buttons', () => {
    const onAnswer = vi.fn();
    const card = show({}, onAnswer);
    (q(card, 'approval-always') as HTMLButtonElement).click();
    (q(card, 'approval-deny') as HTMLButtonElement).click();
    expect(onAnswer.mock.calls).toEqual([['always'], ['deny']]);
  });

  it('says a request from a run nobody watches was asked while the user was away, and when it is denied', () => {
    const card = show({ expiresAt: Date.now() + 30 * 60_000 });
    expect(q(card, 'approval-away')?.textContent).toMatch(
      /^Asked while you were away, by work Vigil carries on by itself\. Unanswered, it is denied at .+ \(in (30|31) min\)\.$/,
    );
    expect(q(show({}), 'approval-away')).toBeNull();
  });
});
