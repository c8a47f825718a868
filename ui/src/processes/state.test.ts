import { describe, expect, it } from 'vitest';
import { ev } from '../chat/testing';
import type { EventEnvelope, SessionSummary } from '../lib/protocol';
import { exited, proc, started } from './testing';
import {
  applyProcessEvent,
  elapsedText,
  initialProcesses,
  MAX_FINISHED,
  mentionedProcess,
  outcomeText,
  ownerLabel,
  runningCount,
  sortedProcesses,
  stateLabel,
  withListed,
  type ProcessesState,
} from './state';

const fold = (s: ProcessesState, events: EventEnvelope[]) => events.reduce(applyProcessEvent, s);

describe('the process list', () => {
  it('follows started and exited, newest first, counting the running ones', () => {
    const a = proc('aaaaaaaa', { started_at: 1000 });
    const b = proc('bbbbbbbb', { started_at: 2000 });
    let s = fold(initialProcesses(), [started(a), started(b)]);
    expect(sortedProcesses(s).map((p) => p.id)).toEqual(['bbbbbbbb', 'aaaaaaaa']);
    expect(runningCount(s)).toBe(2);
    const aDone = { ...a, state: 'exited', exit_code: 0, ended_at: 3000 };
    s = fold(s, [exited(aDone)]);
    expect(s.byId.get('aaaaaaaa')).toEqual(aDone);
    expect(runningCount(s)).toBe(1);
  });

  it('ignores output and other events without copying', () => {
    const s = fold(initialProcesses(), [started(proc('aaaaaaaa'))]);
    expect(applyProcessEvent(s, ev({ type: 'process_output', process_id: 'aaaaaaaa', data_b64: 'aGk=' }, null, null))).toBe(s);
    expect(applyProcessEvent(s, ev({ type: 'text_delta', text: 'x' }))).toBe(s);
  });

  it('never lets a running summary replace an ended one (late list, reordered events)', () => {
    const a = proc('aaaaaaaa');
    const done = { ...a, state: 'killed', signal: 'SIGTERM', ended_at: 5000 };
    let s = fold(initialProcesses(), [started(a), exited(done)]);
    s = withListed(s, [a]);
    expect(s.byId.get('aaaaaaaa')).toEqual(done);
    // An exit that overtook its start.
    s = fold(initialProcesses(), [exited(done), started(a)]);
    expect(s.byId.get('aaaaaaaa')).toEqual(done);
  });

  it('merges the listed processes with those events announced meanwhile', () => {
    const live = proc('cccccccc', { started_at: 9000 });
    const s = withListed(fold(initialProcesses(), [started(live)]), [proc('aaaaaaaa'), proc('bbbbbbbb', { state: 'exited', exit_code: 1 })]);
    expect(sortedProcesses(s).map((p) => p.id)).toEqual(['cccccccc', 'bbbbbbbb', 'aaaaaaaa']);
    expect(runningCount(s)).toBe(2);
  });

  it('keeps at most MAX_FINISHED finished processes, dropping the oldest, and every running one', () => {
    const events = [started(proc('00000000', { started_at: 0 }))];
    for (let i = 1; i <= MAX_FINISHED + 5; i++) {
      events.push(exited(proc(i.toString(16).padStart(8, '0'), { started_at: i, state: 'exited', exit_code: 0 })));
    }
    const s = fold(initialProcesses(), events);
    expect(s.byId.size).toBe(MAX_FINISHED + 1);
    expect(s.byId.has('00000000')).toBe(true);
    expect(s.byId.has('00000001')).toBe(false);
    expect(s.byId.has((MAX_FINISHED + 5).toString(16).padStart(8, '0'))).toBe(true);
  });
});

describe('what a row shows', () => {
  const sessions: SessionSummary[] = [
    { id: 'main', title: '', created_at: 0, updated_at: 0, continuations: 0 },
    { id: 's-trip', title: 'Trip planning', created_at: 0, updated_at: 0, continuations: 0 },
  ];

  it('names the owner', () => {
    expect(ownerLabel('user', sessions)).toBe('you');
    expect(ownerLabel('s-trip', sessions)).toBe('Trip planning');
    expect(ownerLabel('main', sessions)).toBe('Main conversation');
    expect(ownerLabel('heartbeat_session_main', sessions)).toBe('heartbeat');
    expect(ownerLabel('job_42', sessions)).toBe('job_42');
  });

  it('says how long it ran and how it ended', () => {
    const p = proc('aaaaaaaa', { started_at: 0 });
    expect(elapsedText(p, 420)).toBe('0.4 s');
    expect(elapsedText(p, 42_000)).toBe('42 s');
    expect(elapsedText(p, 185_000)).toBe('3 min 05 s');
    expect(elapsedText(p, 2 * 3_600_000 + 3 * 60_000)).toBe('2 h 03 min');
    expect(elapsedText({ ...p, ended_at: 1500 }, 99_000)).toBe('1.5 s');
    expect([stateLabel(p), outcomeText(p)]).toEqual(['running', '']);
    const ok = { ...p, state: 'exited', exit_code: 0 };
    expect([stateLabel(ok), outcomeText(ok)]).toEqual(['done', 'exit 0']);
    const bad = { ...p, state: 'exited', exit_code: 1 };
    expect([stateLabel(bad), outcomeText(bad)]).toEqual(['exited', 'exit 1']);
    const killed = { ...p, state: 'killed', signal: 'SIGKILL' };
    expect([stateLabel(killed), outcomeText(killed)]).toEqual(['killed', 'SIGKILL']);
  });

  it('finds the process an exec result yielded to, if it is known', () => {
    const known = new Map([['3f9a1c2e', proc('3f9a1c2e')]]);
    const text = 'Command still running (session 3f9a1c2e, pid 48213). Use process (list/poll/log/write/kill/clear/remove) for follow-up.';
    expect(mentionedProcess(text, known)).toBe('3f9a1c2e');
    expect(mentionedProcess(text.replace('3f9a1c2e', 'deadbeef'), known)).toBeNull();
    expect(mentionedProcess('(Command exited with code 1)', known)).toBeNull();
  });
});
