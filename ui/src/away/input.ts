// The window's share of the user's presence: where the desktop session cannot say whether
// the user is at the computer (no logind), the core counts input in the window instead. A
// key, a click, the pointer or the wheel is reported, at most once per `INPUT_EVERY_MS`: the
// core only needs to know that five minutes have not passed without any.

/** At most one report per this many milliseconds. */
export const INPUT_EVERY_MS = 30_000;

/** The events that count as the user's input. */
export const INPUT_EVENTS = ['keydown', 'pointerdown', 'pointermove', 'wheel'] as const;

/** A throttled `send`: the first input reports at once, then one per `every` at most. */
export function throttledInput(send: () => void, now: () => number = Date.now, every = INPUT_EVERY_MS): () => void {
  let last = Number.NEGATIVE_INFINITY;
  return () => {
    const t = now();
    if (t - last < every) return;
    last = t;
    send();
  };
}

/** Reports the window's input through `send` until the returned function is called. */
export function watchInput(target: Pick<Window, 'addEventListener' | 'removeEventListener'>, send: () => void): () => void {
  const report = throttledInput(send);
  const options = { capture: true, passive: true };
  for (const name of INPUT_EVENTS) target.addEventListener(name, report, options);
  return () => {
    for (const name of INPUT_EVENTS) target.removeEventListener(name, report, options);
  };
}
