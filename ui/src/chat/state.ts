// The chat's state and the pure reducer that folds core events into it. No Svelte, no
// IPC, no timers: `chat.svelte.ts` owns those and calls in here, so every rule about
// ordering and de-duplication is unit-testable.
//
// Event order for one turn (see vigil-core `agent.rs`): message_appended(user) →
// turn_started → reasoning/text deltas (and retrying) → message_appended(assistant, whole
// or partial) → turn_finished. Errors arrive before turn_finished. Turns on one session
// run one after another, so a message sent mid-turn waits as "pending".

import type { ContentBlock, ErrorKind, EventEnvelope, History, Message, Role } from '../lib/protocol';

export type TurnPhase = 'idle' | 'thinking' | 'streaming';

/** A tool call or tool result, shown as a compact note (tools arrive with the tool loop). */
export interface ToolNote {
  label: string;
  detail: string;
  isError: boolean;
}

/** One rendered message: a saved `Message`, the one streaming in, or one just sent. */
export interface ChatItem {
  /** Stable across streamed → saved replacement so the element is not re-created. */
  key: string;
  role: Role;
  text: string;
  thinking: string;
  tools: ToolNote[];
  ts: number;
  /** The turn it belongs to; null for messages loaded from history. */
  runId: string | null;
  /** Assistant text still arriving. */
  streaming: boolean;
  /** The reply was interrupted by the user. */
  stopped: boolean;
  /** Sent by this window, not yet confirmed saved by the core. */
  pending: boolean;
  model?: string;
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
  /** The session shown; events for other sessions (background jobs) are ignored. */
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
}

const SEEN_LIMIT = 500;

export function initialState(): ChatState {
  return {
    sessionId: null,
    items: [],
    phase: 'idle',
    runId: null,
    retry: null,
    banner: null,
    warnings: [],
    seen: [],
    nextKey: 1,
  };
}

export function isBusy(state: ChatState): boolean {
  return state.phase !== 'idle';
}

function describeToolInput(input: unknown): string {
  try {
    return JSON.stringify(input, null, 2) ?? '';
  } catch {
    return String(input);
  }
}

/** Splits content blocks into what the view shows. */
export function summarise(content: ContentBlock[]): Pick<ChatItem, 'text' | 'thinking' | 'tools'> {
  const text: string[] = [];
  const thinking: string[] = [];
  const tools: ToolNote[] = [];
  for (const block of content) {
    switch (block.type) {
      case 'text':
        text.push(block.text);
        break;
      case 'thinking':
        thinking.push(block.thinking);
        break;
      case 'tool_use':
        tools.push({ label: `Tool: ${block.name}`, detail: describeToolInput(block.input), isError: false });
        break;
      case 'tool_result':
        tools.push({ label: block.is_error ? 'Tool failed' : 'Tool result', detail: block.content, isError: block.is_error });
        break;
    }
  }
  return { text: text.join('\n\n'), thinking: thinking.join('\n\n'), tools };
}

function itemFromMessage(message: Message, key: string, runId: string | null): ChatItem {
  return {
    key,
    role: message.role,
    ...summarise(message.content),
    ts: message.ts,
    runId,
    streaming: false,
    stopped: message.stop_reason === 'cancelled',
    pending: false,
    model: message.model,
  };
}

function withKey(state: ChatState): [ChatState, string] {
  return [{ ...state, nextKey: state.nextKey + 1 }, `m${state.nextKey}`];
}

/** The same saved message seen twice (history and an event, or a replayed event). */
function sameSaved(item: ChatItem, message: Message): boolean {
  return !item.pending && !item.streaming && item.role === message.role && item.ts === message.ts &&
    item.text === summarise(message.content).text;
}

/** Where new confirmed items go: before messages still waiting to be sent. */
function insertBeforePending(items: ChatItem[], item: ChatItem): ChatItem[] {
  const at = items.findIndex((i) => i.pending);
  return at < 0 ? [...items, item] : [...items.slice(0, at), item, ...items.slice(at)];
}

function replaceAt(items: ChatItem[], index: number, item: ChatItem): ChatItem[] {
  return items.map((old, i) => (i === index ? item : old));
}

function updateAt(items: ChatItem[], index: number, patch: Partial<ChatItem>): ChatItem[] {
  return items.map((old, i) => (i === index ? { ...old, ...patch } : old));
}

/** Shows a loaded transcript; items already on screen that it does not contain are kept. */
export function withHistory(state: ChatState, history: History): ChatState {
  let next: ChatState = { ...state, sessionId: history.session_id, warnings: history.warnings };
  const loaded: ChatItem[] = [];
  for (const message of history.messages) {
    let key: string;
    [next, key] = withKey(next);
    loaded.push(itemFromMessage(message, key, null));
  }
  const extra = state.items.filter(
    (item) => !history.messages.some((m) => sameSaved(item, m)),
  );
  return { ...next, items: [...loaded, ...extra] };
}

/** Shows a message this window just sent, until the core confirms it. */
export function addPendingUser(state: ChatState, text: string, ts: number): [ChatState, string] {
  const [next, key] = withKey(state);
  const item: ChatItem = {
    key, role: 'user', text, thinking: '', tools: [], ts, runId: null,
    streaming: false, stopped: false, pending: true,
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

function appendSaved(state: ChatState, message: Message, runId: string | null): ChatState {
  const items = state.items;
  if (items.some((i) => sameSaved(i, message))) return state;

  if (message.role === 'assistant') {
    const at = streamingIndex(items, runId);
    if (at >= 0) {
      const streamed = items[at];
      const saved = itemFromMessage(message, streamed.key, runId);
      // Some providers stream reasoning they do not return in the final content; keep it.
      if (!saved.thinking && streamed.thinking) saved.thinking = streamed.thinking;
      saved.stopped ||= streamed.stopped;
      return { ...state, items: replaceAt(items, at, saved) };
    }
  }

  if (message.role === 'user') {
    const text = summarise(message.content).text;
    const at = items.findIndex((i) => i.pending && i.role === 'user' && i.text.trim() === text.trim());
    if (at >= 0) {
      return { ...state, items: replaceAt(items, at, itemFromMessage(message, items[at].key, runId)) };
    }
  }

  const [next, key] = withKey(state);
  return { ...next, items: insertBeforePending(items, itemFromMessage(message, key, runId)) };
}

function turnStarted(state: ChatState, runId: string | null, userText: string, ts: number): ChatState {
  let next = state;
  let items = state.items;
  const confirmed = items.some((i) => i.role === 'user' && !i.pending && runId !== null && i.runId === runId);
  if (!confirmed) {
    const pending = items.findIndex((i) => i.pending && i.role === 'user' && i.text.trim() === userText.trim());
    const lastUser = items.findLastIndex((i) => i.role === 'user' && !i.pending);
    if (pending >= 0) {
      items = updateAt(items, pending, { pending: false, runId });
    } else if (lastUser >= 0 && items[lastUser].runId === null && items[lastUser].text === userText &&
      !items.slice(lastUser + 1).some((i) => i.role === 'assistant')) {
      // Loaded from history a moment ago, before this event arrived.
      items = updateAt(items, lastUser, { runId });
    } else {
      let key: string;
      [next, key] = withKey(next);
      items = insertBeforePending(items, {
        key, role: 'user', text: userText, thinking: '', tools: [], ts, runId,
        streaming: false, stopped: false, pending: false,
      });
    }
  }
  let key: string;
  [next, key] = withKey(next);
  items = insertBeforePending(items, {
    key, role: 'assistant', text: '', thinking: '', tools: [], ts, runId,
    streaming: true, stopped: false, pending: false,
  });
  return { ...next, items, phase: 'thinking', runId, retry: null };
}

/** Finds (or, if turn_started was missed, creates) the message a delta belongs to. */
function streamingTarget(state: ChatState, runId: string | null, ts: number): [ChatState, number] {
  const at = streamingIndex(state.items, runId);
  if (at >= 0) return [state, at];
  const [next, key] = withKey(state);
  const items = insertBeforePending(state.items, {
    key, role: 'assistant', text: '', thinking: '', tools: [], ts, runId,
    streaming: true, stopped: false, pending: false,
  });
  return [{ ...next, items, runId: runId ?? next.runId }, items.findIndex((i) => i.key === key)];
}

function turnFinished(state: ChatState, runId: string | null, cancelled: boolean): ChatState {
  let items = state.items;
  const at = streamingIndex(items, runId);
  if (at >= 0) {
    const item = items[at];
    const empty = !item.text && !item.thinking && item.tools.length === 0;
    items = empty && !cancelled
      ? items.filter((_, i) => i !== at)
      : updateAt(items, at, { streaming: false, stopped: item.stopped || cancelled });
  } else if (cancelled && runId !== null) {
    const last = items.findLastIndex((i) => i.role === 'assistant' && i.runId === runId);
    if (last >= 0) items = updateAt(items, last, { stopped: true });
  }
  const ours = state.runId === null || runId === null || state.runId === runId;
  return ours ? { ...state, items, phase: 'idle', runId: null, retry: null } : { ...state, items };
}

/** Folds one core event into the state. Pure; returns the same object when nothing changed. */
export function applyEvent(state: ChatState, event: EventEnvelope): ChatState {
  if (state.seen.includes(event.id)) return state;
  const seen = state.seen.length >= SEEN_LIMIT ? [...state.seen.slice(1), event.id] : [...state.seen, event.id];
  const s: ChatState = { ...state, seen };
  if (event.session_id !== null && s.sessionId !== null && event.session_id !== s.sessionId) return s;

  switch (event.type) {
    case 'message_appended':
      return appendSaved(s, event.message, event.run_id);
    case 'turn_started':
      return turnStarted(s, event.run_id, event.user_text, event.ts);
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
    case 'turn_finished':
      return turnFinished(s, event.run_id, event.stop_reason === 'cancelled');
    case 'error':
      return { ...s, banner: { kind: event.kind, message: event.message } };
    case 'notification':
      // The Rust side raises native notifications itself.
      return s;
  }
}

/** "Provider busy — retrying in 2 s (attempt 1)". */
export function retryText(retry: RetryNote): string {
  const seconds = retry.delayMs / 1000;
  const shown = seconds >= 10 || Number.isInteger(seconds) ? Math.round(seconds).toString() : seconds.toFixed(1);
  return `Provider busy — retrying in ${shown} s (attempt ${retry.attempt})`;
}
