// The chat's state and the pure reducer that folds core events into it. No Svelte, no
// IPC, no timers: `chat.svelte.ts` owns those and calls in here, so every rule about
// ordering and de-duplication is unit-testable. `content.ts` says how one saved message
// looks; this file says where it goes.
//
// Event order for one turn (see vigil-core `agent/mod.rs`): message_appended(user) →
// turn_started → per round: deltas → message_appended(assistant, with any tool_use) →
// tool_call_started/update/finished per call → message_appended(tool_result) → steering
// (message_appended(interrupt)… → queue_consumed) → … → turn_finished. A message sent
// while a turn runs is queued in the core (message_queued) and reaches the turn at its
// next step; after Stop it is saved as a plain message instead (then queue_consumed).
//
// Owns: `applyEvent` (which events are the chat's, de-duplication by event id, the session
// filter) and the window's own edits (a pending message, the banner). The rules live in
// `turn.ts` (a turn's events), `history.ts` (a loaded transcript), `items.ts` (the row list)
// and `shown.ts` (what the view shows); the shapes in `model.ts`.
// Must never: touch Svelte, IPC or timers; return a new object when nothing changed.

import type { EventEnvelope } from '../lib/protocol';
import { withResult } from './content';
import { blank, isPlaceholder, streamingIndex, updateAt, withKey } from './items';
import type { Banner, ChatItem, ChatState } from './model';
import { appendSaved, compacted, messageQueued, queueConsumed, streamingTarget, turnFinished, turnStarted, updateCard } from './turn';

export type { Banner, ChatItem, ChatState, Compaction, RetryNote, TurnPhase } from './model';
export { initialState, isBusy } from './model';
export { withHistory } from './history';
export { endsTurn, retryText, silentReplies } from './shown';

const SEEN_LIMIT = 500;

/**
 * Shows a message this window just sent, until the core confirms it. `queued`: a turn is
 * running, so it will wait for that turn's next step.
 */
export function addPendingUser(
  state: ChatState,
  text: string,
  ts: number,
  queued = false,
  images = 0,
): [ChatState, string] {
  const [next, key] = withKey(state);
  const item: ChatItem = {
    ...blank(key, 'user', ts, null),
    text,
    pending: true,
    queued,
    ...(images > 0 ? { attaching: images } : {}),
  };
  return [{ ...next, items: [...next.items, item] }, key];
}

/** The core never got the message (the IPC call failed): take it back off screen. */
export function dropPending(state: ChatState, key: string): ChatState {
  return { ...state, items: state.items.filter((i) => !(i.pending && i.key === key)) };
}

export function showBanner(state: ChatState, banner: Banner): ChatState {
  return { ...state, banner };
}

export function dismissBanner(state: ChatState): ChatState {
  return { ...state, banner: null };
}

/** Events that are other views' business: the chat's state stays the very same object, so
 *  nothing re-renders (50 terminals streaming send ~1 500 `process_output` a second). */
export const NOT_THE_CHATS = new Set([
  // The sidebar's (`sessions/`).
  'sessions_changed',
  // The sidebar's search box (`search/`).
  'history_results',
  // Kept across session switches by `approvals/`; the view places the cards.
  'approval_requested',
  'approval_resolved',
  // The Rust side raises native notifications itself.
  'notification',
  // The status bar's (`heartbeat/`); heartbeat runs have their own session.
  'heartbeat',
  'background_paused',
  // Background processes have their own view; their results reach the chat as background updates.
  'process_started',
  'process_output',
  'process_exited',
  // Not transcript messages: kept across session switches by `heartbeat/`, whose cards the
  // view places among these items by time.
  'background_update',
  'background_updates_read',
  // The routines pane's.
  'routines_changed',
  // The answer to a script's `health` op; the Settings pane asks with a command instead.
  'health',
  // Settings → Tools' (the MCP servers).
  'mcp_servers_changed',
  // The "While you were away" card's (`away/`), above every conversation.
  'while_away',
  // Settings → Away's (the phone channels).
  'channels_changed',
] as const satisfies readonly EventEnvelope['type'][]);

type NotTheChats = Extract<EventEnvelope, { type: typeof NOT_THE_CHATS extends Set<infer T> ? T : never }>;

/** Narrows what is left to the chat's own events, so the `switch` below must handle each. */
function notTheChats(event: EventEnvelope): event is NotTheChats {
  return (NOT_THE_CHATS as ReadonlySet<string>).has(event.type);
}

/** Folds one core event into the state. Pure; returns the same object when nothing changed. */
export function applyEvent(state: ChatState, event: EventEnvelope): ChatState {
  if (notTheChats(event)) return state;
  if (state.seen.includes(event.id)) return state;
  const seen = state.seen.length >= SEEN_LIMIT ? [...state.seen.slice(1), event.id] : [...state.seen, event.id];
  const s: ChatState = { ...state, seen };
  if (event.session_id !== null && s.sessionId !== null && event.session_id !== s.sessionId) return s;

  switch (event.type) {
    case 'message_appended':
      return appendSaved(s, event.message, event.run_id);
    case 'turn_started':
      return turnStarted(s, event.run_id, event.user_text, event.ts, event.source === 'background');
    case 'text_delta': {
      const [next, at] = streamingTarget(s, event.run_id, event.ts);
      const item = next.items[at];
      return { ...next, items: updateAt(next.items, at, { text: item.text + event.text }), phase: 'streaming', retry: null };
    }
    case 'reasoning_delta': {
      const [next, at] = streamingTarget(s, event.run_id, event.ts);
      const item = next.items[at];
      return {
        ...next,
        items: updateAt(next.items, at, { thinking: item.thinking + event.text }),
        phase: item.text ? 'streaming' : 'thinking',
        retry: null,
      };
    }
    case 'retrying':
      return { ...s, retry: { attempt: event.attempt, delayMs: event.delay_ms, reason: event.reason } };
    case 'tool_call_started': {
      const { call_id, name, input } = event;
      const next = updateCard(s, call_id, event.run_id, event.ts, (old) => ({
        id: call_id, name, input, output: old?.output ?? '', status: 'running',
      }));
      return { ...next, phase: 'tools', retry: null };
    }
    case 'tool_call_update':
      return updateCard(s, event.call_id, event.run_id, event.ts, (old) => ({
        id: event.call_id, name: old?.name ?? 'tool', input: old?.input ?? null, status: 'running', output: event.output,
      }));
    case 'tool_call_finished': {
      const { call_id, name, content, is_error } = event;
      return updateCard(s, call_id, event.run_id, event.ts, (old) =>
        withResult(old ?? { id: call_id, name, input: null, status: 'running', output: '' }, content, is_error),
      );
    }
    case 'turn_finished':
      return turnFinished(s, {
        runId: event.run_id,
        ts: event.ts,
        cancelled: event.stop_reason === 'cancelled',
        usage: event.usage,
        detail: event.stop_reason === 'policy' ? (event.detail ?? 'Vigil stopped this turn (turn policy).') : null,
      });
    case 'message_queued':
      return messageQueued(s, event.text, event.ts);
    case 'queue_consumed':
      return queueConsumed(s, event.count);
    case 'compacted':
      return compacted(
        s,
        { summarizedMessages: event.summarized_messages, tokensBefore: event.tokens_before, tokensAfter: event.tokens_after },
        event.run_id,
        event.ts,
      );
    case 'error': {
      // A failed turn's empty reply goes with the banner, not a moment later with
      // turn_finished: the conversation never shows a blank bubble under an error.
      const at = event.run_id === null ? -1 : streamingIndex(s.items, event.run_id);
      let items = at >= 0 && isPlaceholder(s.items[at]) ? s.items.filter((_, i) => i !== at) : s.items;
      // The core refused a message's images: it was not sent (the composer gives it back).
      if (event.kind === 'attachment') {
        const refused = items.findIndex((i) => i.pending && (i.attaching ?? 0) > 0);
        if (refused >= 0) items = items.filter((_, i) => i !== refused);
      }
      return { ...s, items, banner: { kind: event.kind, message: event.message } };
    }
  }
}
