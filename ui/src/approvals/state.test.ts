import { describe, expect, it } from 'vitest';
import { addPendingUser, applyEvent } from '../chat/state';
import { ev, fold, loaded, msg, userTurn } from '../chat/testing';
import type { EventEnvelope } from '../lib/protocol';
import {
  alwaysHint,
  answerFailed,
  awayText,
  answerLocally,
  applyApprovalEvent,
  approvalOp,
  codeSpans,
  durationText,
  execRunText,
  initialApprovals,
  ofSession,
  partLabel,
  partsToShow,
  placeApprovals,
  recordText,
  requestTitle,
  timeLeftText,
  unprovableText,
  waitingSessions,
  type Approval,
  type ApprovalsState,
} from './state';

function foldApprovals(events: EventEnvelope[], state: ApprovalsState = initialApprovals()): ApprovalsState {
  return events.reduce(applyApprovalEvent, state);
}

const build = (id = 'a1', sessionId = 'main', runId = 'r1') =>
  ev(
    { type: 'approval_requested', approval_id: id, kind: 'exec', command: 'cargo build --release', prefix: 'cargo build', cwd: '/home/you/vigil', outside_sandbox: false, env: [], parts: [] },
    runId,
    sessionId,
  );

describe('approval requests', () => {
  it('shows a request as a pending card of its session and turn', () => {
    const requested = build();
    const s = foldApprovals([requested, requested]);
    expect(s.approvals).toEqual([
      {
        id: 'a1',
        sessionId: 'main',
        runId: 'r1',
        kind: 'exec',
        command: 'cargo build --release',
        prefix: 'cargo build',
        cwd: '/home/you/vigil',
        env: [],
        parts: [],
        unprovable: null,
        outsideSandbox: false,
        execRun: null,
        expiresAt: null,
        timedOut: false,
        ts: requested.ts,
        state: 'pending',
        error: null,
      },
    ]);
    expect(waitingSessions(s)).toEqual(new Set(['main']));
  });

  it('collapses to a record when resolved, whatever the decision', () => {
    const s = foldApprovals([
      build('a1'),
      build('a2'),
      build('a3'),
      ev({ type: 'approval_resolved', approval_id: 'a1', decision: 'approve' }),
      ev({ type: 'approval_resolved', approval_id: 'a2', decision: 'always' }),
      ev({ type: 'approval_resolved', approval_id: 'a3', decision: 'deny' }),
    ]);
    expect(s.approvals.map((a) => [a.id, a.state, recordText(a)])).toEqual([
      ['a1', 'approved', 'Approved once'],
      ['a2', 'always', 'Always allowed cargo build'],
      ['a3', 'denied', 'Denied'],
    ]);
    expect(waitingSessions(s)).toEqual(new Set());
  });

  it('collapses at once when answered here; the core’s decision wins, a failed send asks again', () => {
    let s = foldApprovals([build('a1'), build('a2')]);
    s = answerLocally(s, 'a1', 'always');
    expect(s.approvals[0].state).toBe('always');
    expect(answerLocally(s, 'a1', 'deny')).toBe(s);
    // Stop got there first.
    s = applyApprovalEvent(s, ev({ type: 'approval_resolved', approval_id: 'a1', decision: 'deny' }));
    expect(s.approvals[0].state).toBe('denied');

    s = answerFailed(answerLocally(s, 'a2', 'approve'), 'a2', 'Your answer was not sent: offline');
    expect(s.approvals[1]).toMatchObject({ state: 'pending', error: 'Your answer was not sent: offline' });
  });

  it('flags a request from another session for the sidebar, and keeps it off this chat', () => {
    const s = foldApprovals([build('a1', 's-trip', 'r9')]);
    expect(waitingSessions(s)).toEqual(new Set(['s-trip']));
    expect(ofSession(s, 'main')).toEqual([]);
    expect(ofSession(s, 's-trip').map((a) => a.id)).toEqual(['a1']);
  });

  it('denies what is still pending when its turn ends, and forgets deleted sessions', () => {
    let s = foldApprovals([build('a1', 'main', 'r1'), build('a2', 'main', 'r2'), build('a3', 's-old', 'r3')]);
    s = applyApprovalEvent(s, ev({ type: 'turn_finished', stop_reason: 'cancelled', usage: { input_tokens: 0, output_tokens: 0 } }, 'r1'));
    expect(s.approvals.map((a) => a.state)).toEqual(['denied', 'pending', 'pending']);
    s = applyApprovalEvent(s, ev({ type: 'sessions_changed', sessions: [{ id: 'main', title: '', created_at: 0, updated_at: 0, continuations: 0 }] }, null, null));
    expect(s.approvals.map((a) => a.id)).toEqual(['a1', 'a2']);
  });

  it('keeps what the card must show: env, cwd, the parts and whether each is covered', () => {
    const s = foldApprovals([
      ev({
        type: 'approval_requested',
        approval_id: 'c1',
        kind: 'exec',
        command: 'git status && rm -rf build',
        prefix: '',
        cwd: '/home/you/vigil',
        outside_sandbox: false,
        env: ['FOO=1', 'GIT_PAGER=cat'],
        parts: [
          { text: 'git status', covered: true },
          { text: 'rm -rf build', covered: false },
        ],
      }),
    ]);
    const [a] = s.approvals;
    expect(a).toMatchObject({ command: 'git status && rm -rf build', prefix: '', cwd: '/home/you/vigil', env: ['FOO=1', 'GIT_PAGER=cat'] });
    expect(a.unprovable).toBeNull();
    expect(a.outsideSandbox).toBe(false);
    expect(partsToShow(a).map((p) => [p.text, partLabel(p)])).toEqual([
      ['git status', 'allowed'],
      ['rm -rf build', 'needs you'],
    ]);
  });

  it('keeps why a line cannot be checked and whether it leaves the sandbox', () => {
    const s = foldApprovals([
      ev({
        type: 'approval_requested',
        approval_id: 'u1',
        kind: 'exec',
        command: 'ls $(id)',
        prefix: '',
        outside_sandbox: true,
        env: [],
        parts: [],
        unprovable: 'it uses a command substitution',
      }),
    ]);
    const [a] = s.approvals;
    expect(a).toMatchObject({ cwd: null, unprovable: 'it uses a command substitution', outsideSandbox: true, parts: [] });
    expect(partsToShow(a)).toEqual([]);
    expect(unprovableText(a.unprovable!)).toBe('Vigil cannot check this line part by part: it uses a command substitution.');
    expect(recordText({ ...a, state: 'approved' })).toBe('Approved once, outside the sandbox');
  });

  it('keeps how long a command may run, and says it the way the card does', () => {
    const s = foldApprovals([
      ev({
        type: 'approval_requested',
        approval_id: 'b1',
        kind: 'exec',
        command: 'cargo test',
        prefix: 'cargo test',
        outside_sandbox: false,
        env: [],
        parts: [],
        exec_run: { background: true, timeout_ms: 1_800_000 },
      }),
    ]);
    const [a] = s.approvals;
    expect(a.execRun).toEqual({ background: true, timeout_ms: 1_800_000 });
    expect(execRunText(a.execRun!)).toBe('runs in the background · stops after 30 min');
    expect(foldApprovals([build()]).approvals[0].execRun).toBeNull();
    expect([500, 1000, 90_000, 1_800_000, 5_400_000, 86_400_000, 3_661_000].map(durationText)).toEqual([
      '0.5 s',
      '1 s',
      '90 s',
      '30 min',
      '1 h 30 min',
      '24 h',
      '1 h 1 min 1 s',
    ]);
  });

  it('lists no parts for a single command: the line says it', () => {
    const a = foldApprovals([build()]).approvals[0];
    expect(partsToShow({ ...a, parts: [{ text: 'cargo build --release', covered: false }] })).toEqual([]);
  });

  it('titles each kind, typing into a process included, which is never remembered', () => {
    expect(requestTitle('exec')).toBe('Vigil wants to run');
    expect(requestTitle('process_input')).toBe('Vigil wants to type into this running command');
    expect(alwaysHint('process_input', '')).toMatch(/each time/);
  });

  it('marks backtick spans as code without reading any markup', () => {
    expect(codeSpans('install the `bubblewrap` package')).toEqual([
      { text: 'install the ', code: false },
      { text: 'bubblewrap', code: true },
      { text: ' package', code: false },
    ]);
    expect(codeSpans('an odd ` tick')).toEqual([{ text: 'an odd ` tick', code: false }]);
    expect(codeSpans('<b>x</b>')).toEqual([{ text: '<b>x</b>', code: false }]);
  });

  it('keeps when a request asked by a run nobody watches is denied, and says so on the card and its record', () => {
    const asked = ev(
      { type: 'approval_requested', approval_id: 'u1', kind: 'exec', command: 'touch /tmp/marker', prefix: 'touch', outside_sandbox: false, env: [], parts: [], expires_at: 5_000_000 },
      'r1',
      's-b',
    );
    let s = foldApprovals([asked]);
    expect(s.approvals[0]).toMatchObject({ sessionId: 's-b', expiresAt: 5_000_000, timedOut: false });
    const at = (ms: number) => `@${ms}`;
    expect(awayText(5_000_000, 5_000_000 - 58 * 60_000 - 30_000, at)).toBe(
      'Asked while you were away, by work Vigil carries on by itself. Unanswered, it is denied at @5000000 (in 59 min).',
    );
    expect(awayText(5_000_000, 5_000_000, at)).toMatch(/Nobody answered in time/);
    // Denied by its timeout: the record says why.
    s = applyApprovalEvent(s, { ...ev({ type: 'approval_resolved', approval_id: 'u1', decision: 'deny' }, 'r1', 's-b'), ts: 5_000_001 });
    expect(recordText(s.approvals[0])).toBe('Expired: nobody answered in time');
    // Denied by the user before then: a plain denial.
    let t = foldApprovals([asked]);
    t = applyApprovalEvent(t, { ...ev({ type: 'approval_resolved', approval_id: 'u1', decision: 'deny' }, 'r1', 's-b'), ts: 4_000_000 });
    expect(recordText(t.approvals[0])).toBe('Denied');
    // The run that asked passed its deadline first: the core says the question expired.
    let u = foldApprovals([asked]);
    u = applyApprovalEvent(u, {
      ...ev({ type: 'approval_resolved', approval_id: 'u1', decision: 'deny', expired: true }, 'r1', 's-b'),
      ts: 4_000_000,
    });
    expect(recordText(u.approvals[0])).toBe('Expired: nobody answered in time');
  });

  it('says the time left in minutes, then hours', () => {
    expect(timeLeftText(30_000)).toBe('in less than a minute');
    expect(timeLeftText(90_000)).toBe('in 2 min');
    expect(timeLeftText(3_600_000)).toBe('in 1 h');
    expect(timeLeftText(3_900_000)).toBe('in 1 h 5 min');
  });

  it('answers with the approval op', () => {
    expect(approvalOp('a1', 'approve')).toEqual({ type: 'approval', id: 'a1', decision: 'approve' });
    expect(approvalOp('a2', 'always')).toEqual({ type: 'approval', id: 'a2', decision: 'always' });
  });

  it('leaves the chat reducer alone', () => {
    const before = loaded([userTurn('hi', 1)]);
    const after = applyEvent(before, build());
    expect(after.items).toBe(before.items);
    expect(after.phase).toBe(before.phase);
  });
});

describe('placing approval cards', () => {
  const at = (ts: number, id = `a${ts}`): Approval => ({
    id, sessionId: 'main', runId: 'r1', kind: 'exec', command: 'make', prefix: 'make', cwd: null, env: [], parts: [], unprovable: null,
    outsideSandbox: false, execRun: null, expiresAt: null, timedOut: false, ts, state: 'pending', error: null,
  });

  it('puts a card under the message whose call waits: before later rounds and unsent messages', () => {
    let chat = fold(loaded([userTurn('build it', 1)]), [
      ev({ type: 'turn_started', user_text: 'build it' }),
      ev({
        type: 'message_appended',
        message: { ...msg('assistant', 'Building.', 10), content: [{ type: 'tool_use', id: 'c1', name: 'exec', input: { command: 'make' } }] },
      }),
      ev({ type: 'tool_call_started', call_id: 'c1', name: 'exec', input: { command: 'make' } }),
    ]);
    [chat] = addPendingUser(chat, 'also run the tests', 30, true);
    chat = applyEvent(chat, ev({ type: 'message_appended', message: msg('assistant', 'Done.', 40) }));
    const [user, call, done] = chat.items.filter((i) => !i.pending);
    expect([user.text, call.tools.map((c) => c.id), done.text]).toEqual(['build it', ['c1'], 'Done.']);

    const placed = placeApprovals(chat.items, [at(20), at(25)]);
    expect(placed.end).toEqual([]);
    expect([...placed.after.entries()].map(([key, list]) => [key, list.map((a) => a.id)])).toEqual([[call.key, ['a20', 'a25']]]);
  });

  it('shows a card with nothing before it at the end', () => {
    expect(placeApprovals([], [at(5)]).end.map((a) => a.id)).toEqual(['a5']);
  });
});
