// The item list's small rules: how a saved message becomes a row, where a confirmed row
// goes, which pending rows a saved message stands for, and immutable updates by index.
//
// Owns: row construction (`blank`, `itemFromMessage`), placement (`insertConfirmed`),
// matching (`sameSaved`, `matchPending`, `streamingIndex`) and folding tool results onto
// their cards.
// Must never: decide a turn's phase or read an event (the reducers in `turn.ts` do).

import type { Message, Role } from '../lib/protocol';
import {
  cardsFrom,
  displayText,
  isInterrupt,
  isSummary,
  isSystemEvent,
  thinkingText,
  withResult,
  type ToolCard,
  type ToolStatus,
} from './content';
import { imagesOf, resultImages } from './images';
import type { ChatItem, ChatState } from './model';

export function blank(key: string, role: Role, ts: number, runId: string | null): ChatItem {
  return {
    key, kind: 'message', role, text: '', thinking: '', tools: [], ts, runId,
    streaming: false, stopped: false, pending: false, queued: false, acked: false, interrupt: false,
    usage: null, compaction: null,
  };
}

/** `toolStatus`: what a call whose result is not in yet shows. */
export function itemFromMessage(message: Message, key: string, runId: string | null, toolStatus: ToolStatus): ChatItem {
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

export function withKey(state: ChatState): [ChatState, string] {
  return [{ ...state, nextKey: state.nextKey + 1 }, `m${state.nextKey}`];
}

/** The same saved message seen twice (history and an event, or a replayed event). */
export function sameSaved(item: ChatItem, message: Message): boolean {
  return !item.pending && !item.streaming && item.kind !== 'notice' && item.role === message.role &&
    item.ts === message.ts && item.text === displayText(message);
}

export function isPlaceholder(item: ChatItem | undefined): boolean {
  return !!item && item.streaming && !item.text && !item.thinking && item.tools.length === 0;
}

/**
 * Where new confirmed items go: before messages still waiting to be sent, and before a
 * reply placeholder that has nothing in it yet (a summary saved at the start of a turn).
 */
export function insertConfirmed(items: ChatItem[], item: ChatItem): ChatItem[] {
  let at = items.findIndex((i) => i.pending);
  if (at < 0) at = items.length;
  if (item.role !== 'assistant' && isPlaceholder(items[at - 1])) at -= 1;
  return [...items.slice(0, at), item, ...items.slice(at)];
}

export function replaceAt(items: ChatItem[], index: number, item: ChatItem): ChatItem[] {
  return items.map((old, i) => (i === index ? item : old));
}

export function updateAt(items: ChatItem[], index: number, patch: Partial<ChatItem>): ChatItem[] {
  return items.map((old, i) => (i === index ? { ...old, ...patch } : old));
}

/** Puts a `tool_result` message's results on the cards of their calls. */
export function mergeResults(items: ChatItem[], message: Message): ChatItem[] {
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

export function streamingIndex(items: ChatItem[], runId: string | null): number {
  return items.findIndex((i) => i.streaming && i.role === 'assistant' && (runId === null || i.runId === runId));
}

/**
 * The pending items a saved user message stands for: the oldest with the same text, or
 * (when a turn starts with several queued messages joined) the first few together.
 */
export function matchPending(items: ChatItem[], text: string): number[] {
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
