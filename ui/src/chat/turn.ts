// The reducers for one turn's events: a saved message replacing what streamed or was
// pending, the turn's start and end, the cards of tool calls, the core's queue, compaction.
//
// Owns: the ordering rules of the event sequence described in `state.ts` (a missed
// `turn_started`, crossed queue events, an empty last round).
// Must never: show a saved message twice, or lose a pending one the core has not confirmed.

import type { Message, Usage } from '../lib/protocol';
import { displayText, hasContext, isEmptyUsage, isSummary, isSystemEvent, mergeCards, type ToolCard, type ToolStatus } from './content';
import {
  blank,
  insertConfirmed,
  isPlaceholder,
  itemFromMessage,
  matchPending,
  mergeResults,
  replaceAt,
  sameSaved,
  streamingIndex,
  updateAt,
  withKey,
} from './items';
import type { ChatItem, ChatState, Compaction } from './model';

/** Whether calls of `runId` are still being worked on. */
export function runActive(state: ChatState, runId: string | null): boolean {
  return runId !== null && state.phase !== 'idle' && (state.runId === null || state.runId === runId);
}

export function appendSaved(state: ChatState, message: Message, runId: string | null): ChatState {
  const items = state.items;
  if (message.role === 'tool_result') return { ...state, items: mergeResults(items, message) };
  if (items.some((i) => sameSaved(i, message))) return state;

  const status: ToolStatus = runActive(state, runId) ? 'running' : 'interrupted';
  if (message.role === 'assistant') {
    const at = streamingIndex(items, runId);
    if (at >= 0) {
      const streamed = items[at];
      const saved = itemFromMessage(message, streamed.key, runId, status);
      // Some providers stream reasoning they do not return in the final content; keep it.
      if (!saved.thinking && streamed.thinking) saved.thinking = streamed.thinking;
      saved.tools = mergeCards(saved.tools, streamed.tools);
      saved.stopped ||= streamed.stopped;
      return { ...state, items: replaceAt(items, at, saved) };
    }
  }

  if (message.role === 'user' && !isSummary(message) && !isSystemEvent(message)) {
    const matched = matchPending(items, displayText(message));
    if (matched.length > 0) {
      const [first, ...rest] = matched;
      const saved = itemFromMessage(message, items[first].key, runId, status);
      // Only a message that starts a turn carries context; one without came from the
      // core's queue (a steer, or kept after Stop) and a queue_consumed will follow.
      const fromQueue = !hasContext(message);
      const unacked = fromQueue ? matched.filter((i) => !items[i].acked).map((i) => items[i].text.trim()) : [];
      return {
        ...state,
        items: replaceAt(items, first, saved).filter((_, i) => !rest.includes(i)),
        consumedAhead: state.consumedAhead + (fromQueue ? matched.length : 0),
        lateAcks: unacked.length > 0 ? [...state.lateAcks, ...unacked] : state.lateAcks,
      };
    }
  }

  const [next, key] = withKey(state);
  return { ...next, items: insertConfirmed(items, itemFromMessage(message, key, runId, status)) };
}

/** `background`: Vigil started the turn on its own (a continuation); it opens with a system line. */
export function turnStarted(state: ChatState, runId: string | null, userText: string, ts: number, background: boolean): ChatState {
  let next = state;
  let items = state.items;
  const confirmed = items.some((i) => i.role === 'user' && !i.pending && runId !== null && i.runId === runId);
  if (!confirmed) {
    const pending = background ? [] : matchPending(items, userText);
    const lastUser = items.findLastIndex((i) => (i.kind === 'message' || i.kind === 'system') && i.role === 'user' && !i.pending);
    if (pending.length > 0) {
      const [first, ...rest] = pending;
      items = updateAt(items, first, { pending: false, queued: false, acked: false, runId, text: userText })
        .filter((_, i) => !rest.includes(i));
    } else if (lastUser >= 0 && items[lastUser].runId === null && items[lastUser].text === userText &&
      !items.slice(lastUser + 1).some((i) => i.role === 'assistant')) {
      // Loaded from history a moment ago, before this event arrived.
      items = updateAt(items, lastUser, { runId });
    } else {
      let key: string;
      [next, key] = withKey(next);
      items = insertConfirmed(items, { ...blank(key, 'user', ts, runId), kind: background ? 'system' : 'message', text: userText });
    }
  }
  let key: string;
  [next, key] = withKey(next);
  items = insertConfirmed(items, { ...blank(key, 'assistant', ts, runId), streaming: true });
  return { ...next, items, phase: 'thinking', runId, retry: null };
}

/** Finds (or, if turn_started was missed, creates) the message a delta belongs to. */
export function streamingTarget(state: ChatState, runId: string | null, ts: number): [ChatState, number] {
  const at = streamingIndex(state.items, runId);
  if (at >= 0) return [state, at];
  const [next, key] = withKey(state);
  const items = insertConfirmed(state.items, { ...blank(key, 'assistant', ts, runId), streaming: true });
  return [{ ...next, items, runId: runId ?? next.runId }, items.findIndex((i) => i.key === key)];
}

/** The item holding call `callId`, or the message the call belongs to (created if need be). */
export function cardTarget(state: ChatState, callId: string, runId: string | null, ts: number): [ChatState, number] {
  const holder = state.items.findLastIndex((i) => i.tools.some((c) => c.id === callId));
  if (holder >= 0) return [state, holder];
  const streaming = streamingIndex(state.items, runId);
  if (streaming >= 0) return [state, streaming];
  const last = state.items.findLastIndex((i) => i.role === 'assistant' && i.kind === 'message' && runId !== null && i.runId === runId);
  if (last >= 0) return [state, last];
  const [next, key] = withKey(state);
  const items = insertConfirmed(state.items, blank(key, 'assistant', ts, runId));
  return [{ ...next, items }, items.findIndex((i) => i.key === key)];
}

export function updateCard(state: ChatState, callId: string, runId: string | null, ts: number, make: (old: ToolCard | undefined) => ToolCard): ChatState {
  const [next, at] = cardTarget(state, callId, runId, ts);
  const tools = next.items[at].tools;
  const old = tools.find((c) => c.id === callId);
  const card = make(old);
  const updated = old ? tools.map((c) => (c.id === callId ? card : c)) : [...tools, card];
  return { ...next, items: updateAt(next.items, at, { tools: updated }) };
}

export interface Finished {
  runId: string | null;
  ts: number;
  cancelled: boolean;
  usage: Usage;
  detail: string | null;
}

export function turnFinished(state: ChatState, f: Finished): ChatState {
  let next = state;
  let items = state.items;
  const ofRun = (i: ChatItem) => i.role === 'assistant' && i.kind === 'message' && f.runId !== null && i.runId === f.runId;
  const at = streamingIndex(items, f.runId);
  if (at >= 0) {
    const item = items[at];
    const earlier = items.findLastIndex((i, j) => j < at && ofRun(i));
    if (isPlaceholder(item) && (!f.cancelled || earlier >= 0)) {
      // Nothing came after the last round: the round before it ends the turn.
      items = items.filter((_, i) => i !== at);
      if (f.cancelled) items = updateAt(items, earlier, { stopped: true });
    } else {
      items = updateAt(items, at, { streaming: false, stopped: item.stopped || f.cancelled });
    }
  } else if (f.cancelled && f.runId !== null) {
    const last = items.findLastIndex(ofRun);
    if (last >= 0) items = updateAt(items, last, { stopped: true });
  }
  // A call still running when its turn ends never reports back.
  items = items.map((i) =>
    (i.runId === f.runId || i.runId === null) && i.tools.some((c) => c.status === 'running')
      ? { ...i, tools: i.tools.map((c) => (c.status === 'running' ? { ...c, status: 'interrupted' as const } : c)) }
      : i,
  );
  const last = items.findLastIndex(ofRun);
  if (last >= 0 && !isEmptyUsage(f.usage)) items = updateAt(items, last, { usage: f.usage });
  if (f.detail) {
    let key: string;
    [next, key] = withKey(next);
    items = insertConfirmed(items, { ...blank(key, 'assistant', f.ts, f.runId), kind: 'notice', text: f.detail });
  }
  const ours = state.runId === null || f.runId === null || state.runId === f.runId;
  return ours ? { ...next, items, phase: 'idle', runId: null, retry: null } : { ...next, items };
}

export function messageQueued(state: ChatState, text: string, ts: number): ChatState {
  const late = state.lateAcks.indexOf(text.trim());
  if (late >= 0) return { ...state, lateAcks: state.lateAcks.filter((_, i) => i !== late) };
  const at = state.items.findIndex((i) => i.pending && i.role === 'user' && !i.acked && i.text.trim() === text.trim());
  if (at >= 0) return { ...state, items: updateAt(state.items, at, { queued: true, acked: true }) };
  // Sent from elsewhere (another window, the headless runner).
  const [next, key] = withKey(state);
  const item: ChatItem = { ...blank(key, 'user', ts, null), text, pending: true, queued: true, acked: true };
  return { ...next, items: [...next.items, item] };
}

/** The oldest `count` queued messages were delivered; clear the marker of those not replaced yet. */
export function queueConsumed(state: ChatState, count: number): ChatState {
  const ahead = Math.min(count, state.consumedAhead);
  let left = count - ahead;
  const items = state.items.map((i) => {
    if (left > 0 && i.pending && i.acked) {
      left -= 1;
      return { ...i, pending: false, queued: false };
    }
    return i;
  });
  return { ...state, items, consumedAhead: state.consumedAhead - ahead };
}

export function compacted(state: ChatState, c: Compaction, runId: string | null, ts: number): ChatState {
  const at = state.items.findLastIndex((i) => i.kind === 'summary');
  if (at >= 0 && state.items[at].compaction === null) {
    return { ...state, items: updateAt(state.items, at, { compaction: c }) };
  }
  const [next, key] = withKey(state);
  const item: ChatItem = { ...blank(key, 'user', ts, runId), kind: 'summary', compaction: c };
  return { ...next, items: insertConfirmed(state.items, item) };
}
