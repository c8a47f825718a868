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

import type { ErrorKind, EventEnvelope, History, Message, Role, Usage } from '../lib/protocol';
import {
  addUsage,
  cardsFrom,
  displayText,
  hasContext,
  isEmptyUsage,
  isInterrupt,
  isSilentReply,
  isSummary,
  isSystemEvent,
  maybeSilentReply,
  mergeCards,
  startsTurn,
  thinkingText,
  withResult,
  type ToolCard,
  type ToolStatus,
} from './content';
import { imagesOf, resultImages, type ImageRef } from './images';

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
}

const SEEN_LIMIT = 500;

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

function blank(key: string, role: Role, ts: number, runId: string | null): ChatItem {
  return {
    key, kind: 'message', role, text: '', thinking: '', tools: [], ts, runId,
    streaming: false, stopped: false, pending: false, queued: false, acked: false, interrupt: false,
    usage: null, compaction: null,
  };
}

/** `toolStatus`: what a call whose result is not in yet shows. */
function itemFromMessage(message: Message, key: string, runId: string | null, toolStatus: ToolStatus): ChatItem {
  const images = imagesOf(message.content);
  return {
    ...(images.length > 0 ? { images } : {}),
    ...blank(key, message.role, message.ts, runId),
    kind: isSummary(message) ? 'summary' : isSystemEvent(message) ? 'system' : 'message',
    text: displayText(message),
    thinking: thinkingText(message.content),
    tools: cardsFrom(message.content, toolStatus),
    stopped: message.stop_reason === 'cancelled',
    interrupt: isInterrupt(message),
    model: message.model,
  };
}

function withKey(state: ChatState): [ChatState, string] {
  return [{ ...state, nextKey: state.nextKey + 1 }, `m${state.nextKey}`];
}

/** The same saved message seen twice (history and an event, or a replayed event). */
function sameSaved(item: ChatItem, message: Message): boolean {
  return !item.pending && !item.streaming && item.kind !== 'notice' && item.role === message.role &&
    item.ts === message.ts && item.text === displayText(message);
}

function isPlaceholder(item: ChatItem | undefined): boolean {
  return !!item && item.streaming && !item.text && !item.thinking && item.tools.length === 0;
}

/**
 * Where new confirmed items go: before messages still waiting to be sent, and before a
 * reply placeholder that has nothing in it yet (a summary saved at the start of a turn).
 */
function insertConfirmed(items: ChatItem[], item: ChatItem): ChatItem[] {
  let at = items.findIndex((i) => i.pending);
  if (at < 0) at = items.length;
  if (item.role !== 'assistant' && isPlaceholder(items[at - 1])) at -= 1;
  return [...items.slice(0, at), item, ...items.slice(at)];
}

function replaceAt(items: ChatItem[], index: number, item: ChatItem): ChatItem[] {
  return items.map((old, i) => (i === index ? item : old));
}

function updateAt(items: ChatItem[], index: number, patch: Partial<ChatItem>): ChatItem[] {
  return items.map((old, i) => (i === index ? { ...old, ...patch } : old));
}

/** Puts a `tool_result` message's results on the cards of their calls. */
function mergeResults(items: ChatItem[], message: Message): ChatItem[] {
  let out = items;
  const pictures = resultImages(message.content);
  for (const block of message.content) {
    if (block.type !== 'tool_result') continue;
    const at = out.findLastIndex((i) => i.tools.some((c) => c.id === block.tool_use_id));
    if (at < 0) continue;
    const images = pictures.get(block.tool_use_id);
    const done = (c: ToolCard) => ({ ...withResult(c, block.content, block.is_error), ...(images ? { images } : {}) });
    out = updateAt(out, at, {
      tools: out[at].tools.map((c) => (c.id === block.tool_use_id ? done(c) : c)),
    });
  }
  return out;
}

/** Sums each turn's usage onto its last assistant message; `open`: the last turn still runs. */
function withTurnUsage(items: ChatItem[], messages: Message[], open: boolean): ChatItem[] {
  const byKey = new Map<string, Usage | null>();
  let sum: Usage | null = null;
  let last: string | null = null;
  const close = () => {
    if (last !== null && !isEmptyUsage(sum)) byKey.set(last, sum);
    sum = null;
    last = null;
  };
  // Items and the messages they came from line up once tool results are skipped.
  const shown = messages.filter((m) => m.role !== 'tool_result');
  shown.forEach((message, i) => {
    if (startsTurn(message)) close();
    if (message.role === 'assistant') {
      sum = addUsage(sum, message.usage);
      last = items[i].key;
    }
  });
  if (!open) close();
  return items.map((item) => (byKey.has(item.key) ? { ...item, usage: byKey.get(item.key) ?? null } : item));
}

/**
 * Shows a loaded transcript; items already on screen that it does not contain are kept.
 * `running`: a turn is under way in this session, so calls without a result are running.
 */
export function withHistory(state: ChatState, history: History, running = false): ChatState {
  let next: ChatState = { ...state, sessionId: history.session_id, warnings: history.warnings };
  let loaded: ChatItem[] = [];
  for (const message of history.messages) {
    if (message.role === 'tool_result') {
      loaded = mergeResults(loaded, message);
      continue;
    }
    let key: string;
    [next, key] = withKey(next);
    loaded.push(itemFromMessage(message, key, null, 'interrupted'));
  }
  loaded = withTurnUsage(loaded, history.messages, running);
  if (running) {
    const turnStart = loaded.findLastIndex((i) => (i.kind === 'message' && i.role === 'user' && !i.interrupt) || i.kind === 'system');
    loaded = loaded.map((item, i) =>
      i > turnStart && item.tools.some((c) => c.status === 'interrupted')
        ? { ...item, tools: item.tools.map((c) => (c.status === 'interrupted' ? { ...c, status: 'running' as const } : c)) }
        : item,
    );
  }
  const extra = state.items.filter((item) => !history.messages.some((m) => sameSaved(item, m)));
  return { ...next, items: [...loaded, ...extra], phase: running && next.phase === 'idle' ? 'thinking' : next.phase };
}

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

function streamingIndex(items: ChatItem[], runId: string | null): number {
  return items.findIndex((i) => i.streaming && i.role === 'assistant' && (runId === null || i.runId === runId));
}

/** Whether calls of `runId` are still being worked on. */
function runActive(state: ChatState, runId: string | null): boolean {
  return runId !== null && state.phase !== 'idle' && (state.runId === null || state.runId === runId);
}

/**
 * The pending items a saved user message stands for: the oldest with the same text, or
 * (when a turn starts with several queued messages joined) the first few together.
 */
function matchPending(items: ChatItem[], text: string): number[] {
  const pending = items.flatMap((item, i) => (item.pending && item.role === 'user' ? [i] : []));
  const single = pending.find((i) => items[i].text.trim() === text.trim());
  if (single !== undefined) return [single];
  for (let n = 2; n <= pending.length; n++) {
    const joined = pending.slice(0, n).map((i) => items[i].text.trim()).join('\n\n');
    if (joined === text.trim()) return pending.slice(0, n);
    if (joined.length > text.length) break;
  }
  return [];
}

function appendSaved(state: ChatState, message: Message, runId: string | null): ChatState {
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
function turnStarted(state: ChatState, runId: string | null, userText: string, ts: number, background: boolean): ChatState {
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
function streamingTarget(state: ChatState, runId: string | null, ts: number): [ChatState, number] {
  const at = streamingIndex(state.items, runId);
  if (at >= 0) return [state, at];
  const [next, key] = withKey(state);
  const items = insertConfirmed(state.items, { ...blank(key, 'assistant', ts, runId), streaming: true });
  return [{ ...next, items, runId: runId ?? next.runId }, items.findIndex((i) => i.key === key)];
}

/** The item holding call `callId`, or the message the call belongs to (created if need be). */
function cardTarget(state: ChatState, callId: string, runId: string | null, ts: number): [ChatState, number] {
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

function updateCard(state: ChatState, callId: string, runId: string | null, ts: number, make: (old: ToolCard | undefined) => ToolCard): ChatState {
  const [next, at] = cardTarget(state, callId, runId, ts);
  const tools = next.items[at].tools;
  const old = tools.find((c) => c.id === callId);
  const card = make(old);
  const updated = old ? tools.map((c) => (c.id === callId ? card : c)) : [...tools, card];
  return { ...next, items: updateAt(next.items, at, { tools: updated }) };
}

interface Finished {
  runId: string | null;
  ts: number;
  cancelled: boolean;
  usage: Usage;
  detail: string | null;
}

function turnFinished(state: ChatState, f: Finished): ChatState {
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

function messageQueued(state: ChatState, text: string, ts: number): ChatState {
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
function queueConsumed(state: ChatState, count: number): ChatState {
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

function compacted(state: ChatState, c: Compaction, runId: string | null, ts: number): ChatState {
  const at = state.items.findLastIndex((i) => i.kind === 'summary');
  if (at >= 0 && state.items[at].compaction === null) {
    return { ...state, items: updateAt(state.items, at, { compaction: c }) };
  }
  const [next, key] = withKey(state);
  const item: ChatItem = { ...blank(key, 'user', ts, runId), kind: 'summary', compaction: c };
  return { ...next, items: insertConfirmed(state.items, item) };
}

/** Events that are other views' business: the chat's state stays the very same object, so
 *  nothing re-renders (50 terminals streaming send ~1 500 `process_output` a second). */
export const NOT_THE_CHATS = new Set([
  // The sidebar's (`sessions/`).
  'sessions_changed',
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

/** "Provider busy — retrying in 2 s (attempt 1)". */
export function retryText(retry: RetryNote): string {
  const seconds = retry.delayMs / 1000;
  const shown = seconds >= 10 || Number.isInteger(seconds) ? Math.round(seconds).toString() : seconds.toFixed(1);
  return `Provider busy — retrying in ${shown} s (attempt ${retry.attempt})`;
}

/**
 * Keys of the replies a continuation gave only to say there is nothing to tell
 * (`NO_REPLY`, `HEARTBEAT_OK`; vigil-core sends no notification for them either): not shown,
 * nor is one still streaming that may become one. Only after a system line: the user's own
 * turns show every reply.
 */
export function silentReplies(items: ChatItem[]): ReadonlySet<string> {
  const silent = new Set<string>();
  let unattended = false;
  for (const item of items) {
    if (item.kind === 'system') unattended = true;
    else if (item.kind === 'message' && item.role === 'user' && !item.interrupt) unattended = false;
    else if (unattended && item.kind === 'message' && item.role === 'assistant' && item.tools.length === 0) {
      if (item.streaming ? item.text !== '' && maybeSilentReply(item.text) : isSilentReply(item.text)) silent.add(item.key);
    }
  }
  return silent;
}

/**
 * Whether the item closes its run of assistant messages (the meta line goes there); items
 * in `hidden` are not on screen, so the one before them may close the run.
 */
export function endsTurn(items: ChatItem[], index: number, hidden: ReadonlySet<string> = new Set()): boolean {
  const item = items[index];
  let at = index + 1;
  while (at < items.length && hidden.has(items[at].key)) at++;
  const next = items[at];
  return item.role === 'assistant' && !(next && next.kind === 'message' && next.role === 'assistant');
}
