// Which row a reveal (a clicked notification's or search result's message) points at.
//
// Owns: finding a message's row by its place in the loaded transcript, checked by its time,
// else by its time alone.
// Must never: point at a hidden row, or at a row of another message when the place is stale.

import type { ChatItem, SavedPlace } from './model';

/** A message to bring into view: its time, and its place in the transcript when known (a search result's). */
export interface MessageTarget {
  ts: number;
  seq?: number;
}

/** The index among `items` of the target's row; -1 when it is not (yet) among them. */
export function messageRow(items: ChatItem[], saved: SavedPlace[] | undefined, hidden: ReadonlySet<string>, target: MessageTarget): number {
  // By place: that very message, even beside others of the same millisecond; only while
  // the place still holds a message of that time (else the transcript was loaded anew).
  const place = target.seq === undefined ? undefined : saved?.[target.seq];
  if (place && place.ts === target.ts && !hidden.has(place.key)) {
    const index = items.findIndex((i) => i.key === place.key);
    if (index >= 0) return index;
  }
  let index = items.findIndex((i) => i.ts === target.ts && !hidden.has(i.key));
  // Not that exact message (edited away, or a summary replaced it): the last one before its
  // time, once something later shows it was there.
  if (index < 0 && items.some((i) => i.ts > target.ts)) index = items.findLastIndex((i) => i.ts <= target.ts);
  return index;
}
