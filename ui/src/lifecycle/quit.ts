// The words of the quit prompt, pure: how many processes run and which, shortened.

import type { ProcessSummary } from '../lib/protocol';

/** Commands listed by name; the rest are counted. */
export const LISTED = 5;
const COMMAND_CHARS = 60;

export interface QuitQuestion {
  /** "2 processes are running". */
  title: string;
  /** What quitting does to them, and how to keep them. */
  body: string;
  /** The commands, then "…and N more". */
  lines: string[];
  confirm: string;
}

function shorten(command: string): string {
  const line = (command.split('\n')[0] ?? '').trim();
  return line.length <= COMMAND_CHARS ? line : `${line.slice(0, COMMAND_CHARS - 1)}…`;
}

export function quitQuestion(processes: ProcessSummary[]): QuitQuestion {
  const n = processes.length;
  const title = n === 1 ? '1 process is running' : `${n} processes are running`;
  const lines = processes.slice(0, LISTED).map((p) => shorten(p.command));
  if (n > LISTED) lines.push(`…and ${n - LISTED} more`);
  const them = n === 1 ? 'it' : 'them';
  return {
    title,
    body: `Quitting Vigil kills ${them}. Cancel to keep ${them} running; Vigil stays open.`,
    lines,
    confirm: `Kill ${them} and quit`,
  };
}
