// Builders shared by the processes tests (imported by `*.test.ts` only, never by the app).

import { ev } from '../chat/testing';
import type { EventEnvelope, ProcessSummary } from '../lib/protocol';

export function proc(id: string, extra: Partial<ProcessSummary> = {}): ProcessSummary {
  return {
    id,
    owner: 'main',
    command: `cmd ${id}`,
    cwd: '/w',
    pid: 100,
    state: 'running',
    started_at: 1000,
    ended_at: null,
    exit_code: null,
    signal: null,
    background: true,
    pty: true,
    ...extra,
  };
}

export const started = (p: ProcessSummary): EventEnvelope => ev({ type: 'process_started', process: p }, null, null);
export const exited = (p: ProcessSummary): EventEnvelope => ev({ type: 'process_exited', process: p }, null, null);

export function b64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

export const output = (id: string, text: string): EventEnvelope =>
  ev({ type: 'process_output', process_id: id, data_b64: b64(text) }, null, null);
