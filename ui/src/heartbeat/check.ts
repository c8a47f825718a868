// "Check now", pure: what the button's result line says from the click until the heartbeat's
// final word. A manual wake can be held back (a conversation turn runs, another run holds the
// lock) or fail and be tried again; those events say `retrying` and the line waits on. The
// first final event answers the click, whatever it says, so the user always sees an end —
// "All clear at 10:42" included.

import type { EventEnvelope, HeartbeatSkip } from '../lib/protocol';
import { shortTime } from '../lib/time';

export type CheckPhase = 'idle' | 'checking' | 'done';
export type CheckTone = 'ok' | 'info' | 'warn' | 'danger';

export interface CheckState {
  phase: CheckPhase;
  /** What the line says; empty while idle. */
  text: string;
  tone: CheckTone;
}

export const IDLE: CheckState = { phase: 'idle', text: '', tone: 'info' };

/** Just clicked: the wake is on its way. */
export const CHECKING: CheckState = { phase: 'checking', text: 'Checking…', tone: 'info' };

/** Why a check did not run, for a skip that is not retried. */
const NOT_CHECKED: Record<HeartbeatSkip, string> = {
  disabled: 'the heartbeat is turned off',
  'quiet-hours': 'outside the active hours',
  'requests-in-flight': 'a conversation was busy',
  'empty-heartbeat-file': 'HEARTBEAT.md has no checks in it',
  'heartbeat-file-error': 'HEARTBEAT.md could not be read',
  duplicate: 'nothing new since the last message',
  'no-provider': 'no provider is configured (open Settings)',
  paused: 'background activity is paused (tray menu)',
  lock: 'another heartbeat run was in progress',
  budget: 'today’s token budget for background work is spent',
};

/** While a retry is pending: why the answer takes longer. */
const WAITING: Partial<Record<HeartbeatSkip, string>> = {
  'requests-in-flight': 'Checking after the running turn finishes…',
  lock: 'Another heartbeat run is in progress; checking after it…',
};

/** Formats a time for the line; injected so tests do not depend on the locale. */
export type Clock = (ms: number) => string;

/** The line after `event`, while a check waits for its answer; otherwise unchanged. */
export function withCheckEvent(state: CheckState, event: EventEnvelope, clock: Clock = shortTime): CheckState {
  if (state.phase !== 'checking' || event.type !== 'heartbeat') return state;
  const at = clock(event.ts);
  if (event.retrying) {
    if (event.status === 'failed') return { ...CHECKING, text: 'The provider did not answer; trying again…' };
    const why = event.skip_reason ? WAITING[event.skip_reason] : undefined;
    return { ...CHECKING, text: why ?? 'Checking…' };
  }
  switch (event.status) {
    case 'ok-token':
    case 'ok-empty':
      return { phase: 'done', text: `All clear at ${at}`, tone: 'ok' };
    case 'sent':
      return { phase: 'done', text: `Found something at ${at} — it is in the conversation`, tone: 'info' };
    case 'failed': {
      const detail = event.detail?.trim();
      return { phase: 'done', text: `Check failed at ${at}${detail ? `: ${detail}` : ''}`, tone: 'danger' };
    }
    case 'timed-out': {
      const detail = event.detail?.trim();
      return { phase: 'done', text: `Check ended at ${at}${detail ? `: ${detail}` : ': it took too long'}`, tone: 'warn' };
    }
    case 'skipped': {
      if (event.skip_reason === 'duplicate') return { phase: 'done', text: `Nothing new at ${at}`, tone: 'ok' };
      const why = event.skip_reason ? NOT_CHECKED[event.skip_reason] : 'skipped';
      return { phase: 'done', text: `Not checked at ${at}: ${why}`, tone: 'warn' };
    }
  }
}
