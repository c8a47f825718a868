// How much of a long conversation is on screen. Rendering every message of a long chat at
// once (Markdown, code blocks) held the window's start-up and memory hostage to its length:
// the newest FIRST_STEP items are shown (more while they do not fill the view), and older
// ones RENDER_STEP at a time when the user scrolls up or asks, or when something in them
// must be shown (the bell's card).

/**
 * Items rendered as a conversation opens: more than a window's height of ordinary messages.
 * Each reply is Markdown to render and sanitise, the larger part of opening a conversation.
 */
export const FIRST_STEP = 12;
/** Items added per step up. */
export const RENDER_STEP = 30;

/** The index of the first item shown when `shown` of `total` are. */
export function firstShown(total: number, shown: number): number {
  return Math.max(0, total - shown);
}

/** How many to show so that item `index` of `total` is on screen (never fewer than now). */
export function shownToInclude(total: number, index: number, shown: number): number {
  if (index < 0) return shown;
  return Math.max(shown, total - index);
}

/** One more step up, but not past the start. */
export function showMore(total: number, shown: number): number {
  return Math.min(Math.max(total, shown), shown + RENDER_STEP);
}
