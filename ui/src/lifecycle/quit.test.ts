import { describe, expect, it } from 'vitest';
import type { ProcessSummary } from '../lib/protocol';
import { quitQuestion } from './quit';

function proc(command: string): ProcessSummary {
  return {
    id: command,
    owner: 'user',
    command,
    cwd: '/',
    pid: 1,
    state: 'running',
    started_at: 0,
    ended_at: null,
    exit_code: null,
    signal: null,
    background: true,
    pty: true,
  };
}

describe('quit prompt', () => {
  it('names one process in the singular', () => {
    expect(quitQuestion([proc('cargo build')])).toEqual({
      title: '1 process is running',
      body: 'Quitting Vigil kills it. Cancel to keep it running; Vigil stays open.',
      lines: ['cargo build'],
      confirm: 'Kill it and quit',
    });
  });

  it('counts many, lists five, and shortens long commands to their first line', () => {
    const long = `python3 -c "${'x'.repeat(80)}"`;
    const q = quitQuestion([proc('a'), proc('b\nsecond line'), proc('c'), proc('d'), proc(long), proc('f'), proc('g')]);
    expect(q.title).toBe('7 processes are running');
    expect(q.confirm).toBe('Kill them and quit');
    expect(q.body).toBe('Quitting Vigil kills them. Cancel to keep them running; Vigil stays open.');
    expect(q.lines).toHaveLength(6);
    expect(q.lines[1]).toBe('b');
    expect(q.lines[4]).toHaveLength(60);
    expect(q.lines[4].endsWith('…')).toBe(true);
    expect(q.lines[5]).toBe('…and 2 more');
  });
});
