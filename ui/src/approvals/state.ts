// Approval requests, pure: what is waiting for the user in every session, what was
// answered, where a card goes in the chat, and the op that answers. No Svelte, no IPC:
// `approvals.svelte.ts` holds the state and sends the op.
//
// The core (vigil-core `approval.rs`) emits `approval_requested` when the policy asks,
// waits for the `approval` op (or the turn's cancellation, which denies), then emits
// `approval_resolved` with what it did. Requests are not saved in the transcript, so this
// state lives beside the chat's, across session switches, not inside it.

import { PRIMARY_SESSION } from '../lib/ipc';
import type {
  ApprovalDecision,
  ApprovalKind,
  ApprovalPolicy,
  CommandPart,
  EventEnvelope,
  ExecRun,
  McpCallCard,
  Op,
} from '../lib/protocol';
import type { ChatItem } from '../chat/state';

/** `pending` until answered; then the record of what happened. */
export type ApprovalState = 'pending' | 'approved' | 'always' | 'denied';

export interface Approval {
  id: string;
  sessionId: string;
  runId: string | null;
  kind: ApprovalKind;
  /** The command, or the path for file access (invisible characters already escaped). */
  command: string;
  /** What "always" remembers (`cargo build`, or a folder); empty: "always" is not offered. */
  prefix: string;
  cwd: string | null;
  /** Variables the agent sets for the command, `NAME=value`: part of what runs. */
  env: string[];
  /** The simple commands of the line, each covered (already allowed) or not. */
  parts: CommandPart[];
  /** Why the line could not be checked part by part (`it uses a command substitution`). */
  unprovable: string | null;
  /** It would run outside the sandbox: asked each time, never remembered. */
  outsideSandbox: boolean;
  /** A command: whether it starts in the background and when it is stopped; null otherwise. */
  execRun: ExecRun | null;
  /** An MCP tool call: the server, the tool and its arguments; absent otherwise. */
  mcp?: McpCallCard | null;
  /**
   * Asked by a run nobody watches (a continuation, a routine): when it is denied if nobody
   * answers (ms since the epoch); null when the user was at the screen.
   */
  expiresAt: number | null;
  /** Expired: nobody answered by `expiresAt`, or the run that asked ended first. */
  timedOut: boolean;
  /** When it was asked; places the card among the chat's items. */
  ts: number;
  state: ApprovalState;
  /** Why the answer did not reach the core (the card stays pending). */
  error: string | null;
}

export interface ApprovalsState {
  /** Oldest first; answered ones are kept (bounded) as one-line records. */
  approvals: Approval[];
}

/** Answered records kept; pending requests are never dropped for space. */
const RECORD_LIMIT = 200;

export const STATE_OF: Record<ApprovalDecision, ApprovalState> = {
  approve: 'approved',
  always: 'always',
  deny: 'denied',
};

export function initialApprovals(): ApprovalsState {
  return { approvals: [] };
}

/** The op that answers request `id`; sent with `submit`. */
export function approvalOp(id: string, decision: ApprovalDecision): Op {
  return { type: 'approval', id, decision };
}

function update(state: ApprovalsState, id: string, patch: Partial<Approval>): ApprovalsState {
  if (!state.approvals.some((a) => a.id === id)) return state;
  return { approvals: state.approvals.map((a) => (a.id === id ? { ...a, ...patch } : a)) };
}

function bounded(approvals: Approval[]): Approval[] {
  let extra = approvals.filter((a) => a.state !== 'pending').length - RECORD_LIMIT;
  if (extra <= 0) return approvals;
  return approvals.filter((a) => a.state === 'pending' || extra-- <= 0);
}

/** Folds one core event in; returns the same object when it is not about approvals. */
export function applyApprovalEvent(state: ApprovalsState, event: EventEnvelope): ApprovalsState {
  switch (event.type) {
    case 'approval_requested': {
      // A replayed event (reconnect) must not add a second card.
      if (state.approvals.some((a) => a.id === event.approval_id)) return state;
      const approval: Approval = {
        id: event.approval_id,
        sessionId: event.session_id ?? PRIMARY_SESSION,
        runId: event.run_id,
        kind: event.kind,
        command: event.command,
        prefix: event.prefix,
        cwd: event.cwd ?? null,
        env: event.env ?? [],
        parts: event.parts ?? [],
        unprovable: event.unprovable ?? null,
        outsideSandbox: event.outside_sandbox === true,
        execRun: event.exec_run ?? null,
        mcp: event.mcp ?? undefined,
        expiresAt: event.expires_at ?? null,
        timedOut: false,
        ts: event.ts,
        state: 'pending',
        error: null,
      };
      return { approvals: bounded([...state.approvals, approval]) };
    }
    case 'approval_resolved': {
      // The core's word wins over an answer given here (Stop may have denied first).
      const asked = state.approvals.find((a) => a.id === event.approval_id);
      // `expired`: nobody answered (its time ran out, or the run that asked ended first). The
      // time comparison is for a core from before the flag.
      const timedOut =
        event.expired === true || (event.decision === 'deny' && asked?.expiresAt != null && event.ts >= asked.expiresAt);
      return update(state, event.approval_id, { state: STATE_OF[event.decision], error: null, timedOut });
    }
    case 'turn_finished': {
      // The core resolves every request before its turn can end; should that event be
      // lost, a card must not keep asking about a tool that is no longer waiting.
      const sessionId = event.session_id ?? PRIMARY_SESSION;
      const stale = (a: Approval) =>
        a.state === 'pending' && a.sessionId === sessionId && event.run_id !== null && a.runId === event.run_id;
      if (!state.approvals.some(stale)) return state;
      return { approvals: state.approvals.map((a) => (stale(a) ? { ...a, state: 'denied' as const, error: null } : a)) };
    }
    case 'sessions_changed': {
      const ids = new Set(event.sessions.map((s) => s.id));
      const kept = state.approvals.filter((a) => ids.has(a.sessionId) || a.sessionId === PRIMARY_SESSION);
      return kept.length === state.approvals.length ? state : { approvals: kept };
    }
    default:
      return state;
  }
}

/** The user answered here: the card collapses at once; `approval_resolved` confirms it. */
export function answerLocally(state: ApprovalsState, id: string, decision: ApprovalDecision): ApprovalsState {
  const approval = state.approvals.find((a) => a.id === id);
  if (!approval || approval.state !== 'pending') return state;
  return update(state, id, { state: STATE_OF[decision], error: null });
}

/** The answer never reached the core: ask again, saying why. */
export function answerFailed(state: ApprovalsState, id: string, message: string): ApprovalsState {
  return update(state, id, { state: 'pending', error: message });
}

export function isPending(approval: Approval): boolean {
  return approval.state === 'pending';
}

/** Sessions with a request waiting for the user (the sidebar's marker). */
export function waitingSessions(state: ApprovalsState): ReadonlySet<string> {
  return new Set(state.approvals.filter(isPending).map((a) => a.sessionId));
}

export function ofSession(state: ApprovalsState, sessionId: string): Approval[] {
  return state.approvals.filter((a) => a.sessionId === sessionId);
}

/** Where a session's approval cards go among its chat items. */
export interface Placement {
  /** Cards to show right after the item with that key. */
  after: Map<string, Approval[]>;
  /** Cards with no item to follow (nothing confirmed on screen yet). */
  end: Approval[];
}

/**
 * Each card follows the last confirmed item from before its request: the assistant
 * message whose tool call is waiting, so it sits under that call's card and later rounds
 * come after it. Messages still being sent (pending) are never anchors, so a card stays
 * above a message typed while it waits.
 */
export function placeApprovals(items: ChatItem[], approvals: Approval[]): Placement {
  const placement: Placement = { after: new Map(), end: [] };
  const confirmed = items.filter((i) => !i.pending);
  for (const approval of approvals) {
    const anchor = confirmed.findLast((i) => i.ts <= approval.ts) ?? confirmed.at(-1);
    if (!anchor) {
      placement.end.push(approval);
      continue;
    }
    const list = placement.after.get(anchor.key);
    if (list) list.push(approval);
    else placement.after.set(anchor.key, [approval]);
  }
  return placement;
}

/** "Approved once", "Always allowed `cargo build`", "Denied" (the collapsed card). */
export function recordText(approval: Approval): string {
  switch (approval.state) {
    case 'approved':
      return approval.outsideSandbox ? 'Approved once, outside the sandbox' : 'Approved once';
    case 'always':
      return `Always allowed ${approval.prefix}`;
    case 'denied':
      return approval.timedOut ? 'Expired: nobody answered in time' : 'Denied';
    case 'pending':
      return 'Waiting for your answer';
  }
}

/** The card's heading: what Vigil wants to do. */
export function requestTitle(kind: ApprovalKind): string {
  switch (kind) {
    case 'exec':
      return 'Vigil wants to run';
    case 'read_outside':
      return 'Vigil wants to read outside the workspace';
    case 'write_outside':
      return 'Vigil wants to change a file outside the workspace';
    case 'process_input':
      return 'Vigil wants to type into this running command';
    case 'mcp_call':
      return 'Vigil wants to use a tool of an MCP server';
    case 'steer_file':
      return 'Vigil wants to change a file that steers every future run';
  }
}

/**
 * The parts of a compound line, to list on the card with what each needs; none for a
 * single command (the line itself says it) or a line that could not be read into parts.
 */
export function partsToShow(approval: Approval): CommandPart[] {
  return approval.parts.length > 1 ? approval.parts : [];
}

/** A part's mark on the card: already allowed (a rule or the read-only list), or asked. */
export function partLabel(part: CommandPart): string {
  return part.covered ? 'allowed' : 'needs you';
}

/** The card's line for a line that cannot be checked part by part. */
export function unprovableText(why: string): string {
  return `Vigil cannot check this line part by part: ${why}.`;
}

/** `30 min`, `24 h`, `1 h 30 min`, `90 s`, `0.5 s`: a timeout as the card says it. */
export function durationText(ms: number): string {
  const secs = ms / 1000;
  if (secs < 120) return `${Math.round(secs * 10) / 10} s`;
  const h = Math.floor(secs / 3600);
  const min = Math.floor((secs % 3600) / 60);
  const s = Math.round(secs % 60);
  return [h > 0 ? `${h} h` : '', min > 0 ? `${min} min` : '', s > 0 ? `${s} s` : ''].filter(Boolean).join(' ');
}

/**
 * How long an approved command may run, for the card: `runs in the background · stops
 * after 30 min`, `stops after 24 h`, `runs until killed`. A command with no timeout keeps
 * running until it ends or someone stops it, which the user should know before saying yes.
 */
export function execRunText(run: ExecRun): string {
  const limit = run.timeout_ms === null ? 'until killed' : `stops after ${durationText(run.timeout_ms)}`;
  if (run.background) return `runs in the background · ${limit}`;
  return run.timeout_ms === null ? 'runs until killed' : limit;
}

/** "in 59 min", "in 1 h 5 min", "in less than a minute": time left before an unattended request is denied. */
export function timeLeftText(ms: number): string {
  if (ms < 60_000) return 'in less than a minute';
  const minutes = Math.ceil(ms / 60_000);
  if (minutes < 60) return `in ${minutes} min`;
  const h = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest === 0 ? `in ${h} h` : `in ${h} h ${rest} min`;
}

/**
 * The card's line for a request a run nobody watches is waiting for: that it was asked
 * while the user was away, and when it is denied if unanswered (`at` formats the time).
 */
export function awayText(expiresAt: number, now: number, at: (ms: number) => string): string {
  const left = expiresAt - now;
  if (left <= 0) return 'Asked while you were away. Nobody answered in time, so it is being denied.';
  return `Asked while you were away, by work Vigil carries on by itself. Unanswered, it is denied at ${at(expiresAt)} (${timeLeftText(left)}).`;
}

/** The card's warning when the command would leave the sandbox. */
export const OUTSIDE_SANDBOX_WARNING =
  'Outside the sandbox: this command can change any file you can change and use the network.';

/** The card's note on typing into a process: what is typed is in the call above it. */
export const PROCESS_INPUT_NOTE =
  'The running command takes what the call above types as its input, as if you typed it. Asked each time.';

/** Text with `backtick` spans marked, to show as code without parsing any markup. */
export function codeSpans(text: string): { text: string; code: boolean }[] {
  const pieces = text.split('`');
  // An unmatched backtick: nothing is code.
  if (pieces.length % 2 === 0) return text === '' ? [] : [{ text, code: false }];
  return pieces
    .map((piece, i) => ({ text: piece, code: i % 2 === 1 }))
    .filter((span) => span.text !== '');
}

/** What "always" will allow from now on, for the button's tooltip and the rules list. */
export function alwaysHint(kind: ApprovalKind, prefix: string): string {
  switch (kind) {
    case 'exec':
      return `Run commands starting with “${prefix}” from now on without asking`;
    case 'read_outside':
      return `Read files in ${prefix} from now on without asking`;
    case 'write_outside':
      return `Change files in ${prefix} from now on without asking`;
    case 'process_input':
      return 'Typing into a command is asked about each time';
    case 'mcp_call':
      return `Use the MCP tool ${prefix} from now on without asking, whatever its arguments`;
    case 'steer_file':
      return 'A change to a file that steers every run is asked about each time';
  }
}

export const KIND_LABEL: Record<ApprovalKind, string> = {
  exec: 'Command',
  read_outside: 'Read',
  write_outside: 'Write',
  process_input: 'Input',
  mcp_call: 'MCP tool',
  steer_file: 'Steering file',
};

/** The policies as the settings pane offers them, in order, with what each means. */
export const POLICIES: { value: ApprovalPolicy; label: string; explain: string }[] = [
  {
    value: 'ask',
    label: 'Ask before running commands',
    explain: 'Vigil asks before each command and before touching files outside its workspace, unless you always allowed it.',
  },
  {
    value: 'allowlist',
    label: 'Only run allow-listed commands',
    explain: 'What you always allowed runs; everything else is refused without asking.',
  },
  {
    value: 'full-auto',
    label: 'Run everything without asking',
    explain: 'Any command runs and files outside the workspace can be read and changed — nothing is asked.',
  },
  {
    value: 'read-only',
    label: 'Read-only',
    explain: 'No commands and no changes outside the workspace; reading files there is allowed.',
  },
];
