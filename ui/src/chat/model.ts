// The chat's state as plain data: one rendered row per message or line, the turn's phase,
// the banner, and what the reducer remembers to order and de-duplicate events.
//
// Owns: the shapes `state.ts` folds events into and the views read; the empty state.
// Must never: hold logic beyond defaults (the rules live in `state.ts`, `turn.ts`,
// `history.ts`, `items.ts`); import Svelte or IPC.

import type { ErrorKind, Role, Usage } from '../lib/protocol';
import type { ToolCard } from './content';
import type { ImageRef } from './images';

export type TurnPhase = 'idle' | 'thinking' | 'streaming' | 'tools';

export interface Compaction {
  summarizedMessages: number;
  tokensBefore: number;
  tokensAfter: number;
}

/**
 * One rendered row. `message` rows are user and assistant messages (tool results fold into
 * their call's card); `summary` is a compaction summary (or only the note that one
 * happened); `notice` is a turn-policy stop; `system` is what happened while nobody typed
 * (a background command's exit notice, which starts a turn on its own, or why Vigil stopped
 * continuing), a user-role message shown as a line of its own.
 */
export interface ChatItem {
  /** Stable across streamed → saved replacement so the element is not re-created. */
  key: string;
  kind: 'message' | 'summary' | 'notice' | 'system';
  role: Role;
  text: string;
  thinking: string;
  tools: ToolCard[];
  ts: number;
  /** The turn it belongs to; null for messages loaded from history. */
  runId: string | null;
  /** Assistant text still arriving. */
  streaming: boolean;
  /** The reply was interrupted by the user. */
  stopped: boolean;
  /** Not saved yet: sent by this window, or waiting in the core's queue. */
  pending: boolean;
  /** Waiting for the running turn's next step; shows the "queued" marker. */
  queued: boolean;
  /** The core reported this message queued (`message_queued`). */
  acked: boolean;
  /** A message sent while Vigil was working (saved as `[INTERRUPT] …`). */
  interrupt: boolean;
  /** Tokens of the whole turn, on its last assistant message. */
  usage: Usage | null;
  compaction: Compaction | null;
  model?: string;
  /** Images sent with a user message. */
  images?: ImageRef[];
  /** A message still being sent with this many images (they are checked before it is saved). */
  attaching?: number;
}

export interface Banner {
  kind: ErrorKind | 'ui';
  message: string;
}

export interface RetryNote {
  attempt: number;
  delayMs: number;
  reason: string;
}

export interface ChatState {
  /** The session shown; events for other sessions are ignored. */
  sessionId: string | null;
  items: ChatItem[];
  phase: TurnPhase;
  runId: string | null;
  retry: RetryNote | null;
  banner: Banner | null;
  /** Lines of the transcript the core could not load. */
  warnings: string[];
  /** Recent event ids, to drop duplicates after a reconnect. Bounded. */
  seen: string[];
  nextKey: number;
  /**
   * Queued messages already replaced by their saved copy, which `queue_consumed` (sent
   * after the saves) must not count again.
   */
  consumedAhead: number;
  /** Texts saved from the queue before their `message_queued` arrived (events of two tasks may cross). */
  lateAcks: string[];
  /**
   * The row each message of the loaded transcript is shown in (a tool result: its call's
   * row), by the message's stable id: a search result names its message by id.
   */
  savedRows?: ReadonlyMap<string, string>;
}

export function initialState(sessionId: string | null = null): ChatState {
  return {
    sessionId,
    items: [],
    phase: 'idle',
    runId: null,
    retry: null,
    banner: null,
    warnings: [],
    seen: [],
    nextKey: 1,
    consumedAhead: 0,
    lateAcks: [],
  };
}

export function isBusy(state: ChatState): boolean {
  return state.phase !== 'idle';
}
