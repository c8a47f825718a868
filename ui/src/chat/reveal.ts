// Which row a reveal (a clicked notification's or search result's message) points at.
//
// Owns: finding a search result's row by its message's stable id among the loaded
// transcript's messages, and a notification's by its message's time.
// Must never: point at a hidden row, or guess a search result's row from its place or time
// (a transcript loaded anew, pruned or repaired moves places; several messages share a time).

import type { ChatItem } from './model';

/**
 * A message to bring into view: a search result's, by its stable id (the `SavedMessage.id`
 * of the loaded history), or a clicked notification's, by its time (a notification names
 * no message id).
 */
export type MessageTarget = { messageId: string } | { ts: number };

/** The index among `items` of the target's row; -1 when it is not (yet) among them. */
export function messageRow(
  items: ChatItem[],
  savedRows: ReadonlyMap<string, string> | undefined,
  hidden: ReadonlySet<string>,
  target: MessageTarget,
): number {
  if ('messageId' in target) {
    const key = savedRows?.get(target.messageId);
    let index = key === undefined ? -1 : items.findIndex((i) => i.key === key);
    // A reply not shown ("nothing to tell"): the row it followed.
    while (index >= 0 && hidden.has(items[index].key)) index--;
    return index;
  }
  let index = items.findIndex((i) => i.ts === target.ts && !hidden.has(i.key));
  // Not that exact message (edited away, or a summary replaced it): the last one before its
  // time, once something later shows it was there.
  if (index < 0 && items.some((i) => i.ts > target.ts)) index = items.findLastIndex((i) => i.ts <= target.ts);
  return index;
}
