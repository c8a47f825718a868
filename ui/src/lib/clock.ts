// The page's clocks for what is shown relative to now ("5 min", "ran 12 s", "denied at
// 14:05 (in 59 min)"). A component reads `now` in its markup and is redrawn when the clock
// ticks. A clock ticks on the boundary of its period (the minute clock on the minute),
// only while something on screen reads it and only while the window is visible: hidden in
// the tray no timer runs at all, and showing the window again brings every reader up to
// date at once. An idle page with timers per component woke itself for nothing.

import { createSubscriber } from 'svelte/reactivity';

export class Clock {
  #subscribe: () => void;

  constructor(
    /** Milliseconds between ticks; ticks fall on multiples of it since the epoch. */
    readonly period: number,
    doc: Document = document,
  ) {
    this.#subscribe = createSubscriber((update) => {
      let timer: ReturnType<typeof setTimeout> | null = null;
      const arm = () => {
        if (timer !== null) clearTimeout(timer);
        timer = null;
        if (doc.visibilityState !== 'visible') return;
        timer = setTimeout(
          () => {
            update();
            arm();
          },
          period - (Date.now() % period),
        );
      };
      const onVisibility = () => {
        if (doc.visibilityState === 'visible') update();
        arm();
      };
      doc.addEventListener('visibilitychange', onVisibility);
      arm();
      return () => {
        if (timer !== null) clearTimeout(timer);
        doc.removeEventListener('visibilitychange', onVisibility);
      };
    });
  }

  /**
   * The time now; read in an effect, the effect runs again at the next tick. (Now, not the
   * last tick's time: a reader that shows up between ticks starts from the right time.)
   */
  get now(): number {
    this.#subscribe();
    return Date.now();
  }
}

/** Whether the window is shown (not hidden in the tray or minimised), for effects. */
export class PageVisibility {
  #subscribe: () => void;

  constructor(private readonly doc: Document = document) {
    this.#subscribe = createSubscriber((update) => {
      doc.addEventListener('visibilitychange', update);
      return () => doc.removeEventListener('visibilitychange', update);
    });
  }

  get visible(): boolean {
    this.#subscribe();
    return this.doc.visibilityState === 'visible';
  }
}

export const page = new PageVisibility();

/** For "5 min", "yesterday", "denied at 14:05 (in 59 min)". */
export const minuteClock = new Clock(60_000);
/** For what counts seconds while it lasts: a running process's time, a retry's countdown. */
export const secondClock = new Clock(1000);
