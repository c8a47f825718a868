// The Processes panel's list, pure: every process the core told about (events and
// `list_processes`), newest first, with what a row shows — owner, state, elapsed time,
// outcome. `processes.svelte.ts` holds the state, the output buffers and does the IPC.

import type { EventEnvelope, ProcessSummary, SessionSummary } from '../lib/protocol';
import { shownTitle } from '../sessions/state';

/** The owner of commands started from the panel (vigil-core `USER_OWNER`). */
export const USER_OWNER = 'user';
/** Finished processes the UI keeps (with their output); older ones are forgotten. */
export const MAX_FINISHED = 100;

export type ProcessState = 'running' | 'exited' | 'killed' | 'failed';

export interface ProcessesState {
  byId: ReadonlyMap<string, ProcessSummary>;
}

export function initialProcesses(): ProcessesState {
  return { byId: new Map() };
}

export function isRunning(p: ProcessSummary): boolean {
  return p.state === 'running';
}

/**
 * The summary to keep when two arrive for one process: an ended one is never replaced by a
 * running one (a `list_processes` answer can be older than a `process_exited` event).
 */
function newer(old: ProcessSummary | undefined, incoming: ProcessSummary): ProcessSummary {
  if (old && !isRunning(old) && isRunning(incoming)) return old;
  return incoming;
}

function upsert(s: ProcessesState, incoming: ProcessSummary): ProcessesState {
  const old = s.byId.get(incoming.id);
  const kept = newer(old, incoming);
  if (kept === old) return s;
  const byId = new Map(s.byId).set(incoming.id, kept);
  return { byId: prune(byId) };
}

/** Drops the oldest finished processes beyond `MAX_FINISHED` (running ones always stay). */
function prune(byId: Map<string, ProcessSummary>): Map<string, ProcessSummary> {
  const finished = [...byId.values()].filter((p) => !isRunning(p));
  if (finished.length <= MAX_FINISHED) return byId;
  finished.sort(newestFirst);
  for (const p of finished.slice(MAX_FINISHED)) byId.delete(p.id);
  return byId;
}

/** The state after `event`; the same object when it is not about a process's life. */
export function applyProcessEvent(s: ProcessesState, event: EventEnvelope): ProcessesState {
  switch (event.type) {
    case 'process_started':
    case 'process_exited':
      return upsert(s, event.process);
    default:
      return s;
  }
}

/** Takes a `list_processes` answer, keeping what events already said meanwhile. */
export function withListed(s: ProcessesState, list: ProcessSummary[]): ProcessesState {
  return list.reduce(upsert, s);
}

/** Ids that `s` removed compared with `before` (their output can go too). */
export function forgotten(before: ProcessesState, s: ProcessesState): string[] {
  return [...before.byId.keys()].filter((id) => !s.byId.has(id));
}

function newestFirst(a: ProcessSummary, b: ProcessSummary): number {
  return b.started_at - a.started_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

export function sortedProcesses(s: ProcessesState): ProcessSummary[] {
  return [...s.byId.values()].sort(newestFirst);
}

export function runningCount(s: ProcessesState): number {
  let n = 0;
  for (const p of s.byId.values()) if (isRunning(p)) n += 1;
  return n;
}

/** "you", the conversation's title, "heartbeat", or the owner id when nothing better is known. */
export function ownerLabel(owner: string, sessions: readonly SessionSummary[]): string {
  if (owner === USER_OWNER) return 'you';
  const session = sessions.find((s) => s.id === owner);
  if (session) return shownTitle(session);
  if (owner.startsWith('heartbeat')) return 'heartbeat';
  return owner;
}

/** How long it ran, or has run so far: "0.4 s", "12 s", "3 min 05 s", "2 h 03 min". */
export function elapsedText(p: ProcessSummary, now: number): string {
  const ms = Math.max(0, (p.ended_at ?? now) - p.started_at);
  if (ms < 10_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)} s`;
  const secs = Math.floor(ms / 1000);
  if (secs < 60) return `${secs} s`;
  const mins = Math.floor(secs / 60);
  if (mins < 60) return `${mins} min ${String(secs % 60).padStart(2, '0')} s`;
  return `${Math.floor(mins / 60)} h ${String(mins % 60).padStart(2, '0')} min`;
}

/** What the badge says. */
export function stateLabel(p: ProcessSummary): string {
  switch (p.state) {
    case 'running':
      return 'running';
    case 'killed':
      return 'killed';
    case 'failed':
      return 'failed';
    default:
      return p.exit_code === 0 ? 'done' : 'exited';
  }
}

/** The badge's colour class: running, ok, bad or neutral. */
export function stateTone(p: ProcessSummary): 'running' | 'ok' | 'bad' | 'neutral' {
  if (isRunning(p)) return 'running';
  if (p.state === 'exited' && p.exit_code === 0) return 'ok';
  if (p.state === 'killed') return 'neutral';
  return 'bad';
}

/** "exit 0", "exit 1", "SIGTERM", or "" while it runs (or when the core knows nothing). */
export function outcomeText(p: ProcessSummary): string {
  if (isRunning(p)) return '';
  if (p.signal) return p.signal;
  if (p.exit_code !== null) return `exit ${p.exit_code}`;
  return '';
}

/** The process id an `exec` result names ("Command still running (session 3f9a1c2e, pid …)"). */
export function mentionedProcess(text: string, known: ReadonlyMap<string, unknown>): string | null {
  for (const m of text.matchAll(/\bsession ([0-9a-f]{8})\b/g)) if (known.has(m[1])) return m[1];
  return null;
}

/** The command's first line, for a row; the full text goes in the tooltip. */
export function commandLine(command: string): string {
  const first = command.split('\n', 1)[0];
  return first.length < command.length ? `${first} …` : first;
}
