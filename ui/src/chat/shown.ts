// What the chat view shows of its rows: the retry note, the silent replies of unattended
// turns, and where a run of assistant messages ends (its meta line).
//
// Owns: display decisions that read the rows but never change them.
// Must never: hide a reply of a turn the user started.

import { isSilentReply, maybeSilentReply } from './content';
import type { ChatItem, RetryNote } from './model';

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

