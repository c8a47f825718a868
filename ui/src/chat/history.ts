// A loaded transcript shown as rows: tool results folded onto their calls, each turn's
// usage summed onto its last reply, calls of a turn still running shown as running.
//
// Owns: `withHistory`, the row each saved message is shown in, and how it keeps rows on
// screen that the transcript does not hold.
// Must never: drop a row the user sent that is not saved yet.

import type { History, Message, Usage } from '../lib/protocol';
import { addUsage, isEmptyUsage, startsTurn } from './content';
import { itemFromMessage, mergeResults, sameSaved, withKey } from './items';
import type { ChatItem, ChatState } from './model';

/** Sums each turn's usage onto its last assistant message; `open`: the last turn still runs. */
export function withTurnUsage(items: ChatItem[], messages: Message[], open: boolean): ChatItem[] {
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
  const savedRows = new Map<string, string>();
  for (const message of history.messages) {
    if (message.role === 'tool_result') {
      loaded = mergeResults(loaded, message);
      savedRows.set(message.id, callRow(loaded, message));
      continue;
    }
    let key: string;
    [next, key] = withKey(next);
    loaded.push(itemFromMessage(message, key, null, 'interrupted'));
    savedRows.set(message.id, key);
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
  return { ...next, items: [...loaded, ...extra], savedRows, phase: running && next.phase === 'idle' ? 'thinking' : next.phase };
}

/** The row a tool result is shown in: its call's (else the row before it). */
function callRow(items: ChatItem[], message: Message): string {
  const ids = message.content.flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : []));
  const at = items.findLastIndex((i) => i.tools.some((c) => ids.includes(c.id)));
  return items[at >= 0 ? at : items.length - 1]?.key ?? '';
}
