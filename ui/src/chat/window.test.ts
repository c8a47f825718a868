import { describe, expect, it } from 'vitest';
import { firstShown, RENDER_STEP, showMore, shownToInclude } from './window';

describe('the rendered window of a long conversation', () => {
  it('shows everything of a short conversation and the newest step of a long one', () => {
    expect(firstShown(12, RENDER_STEP)).toBe(0);
    expect(firstShown(10_000, RENDER_STEP)).toBe(10_000 - RENDER_STEP);
  });

  it('grows a step at a time up to the start', () => {
    expect(showMore(200, RENDER_STEP)).toBe(2 * RENDER_STEP);
    expect(showMore(RENDER_STEP + 10, RENDER_STEP)).toBe(RENDER_STEP + 10);
    expect(firstShown(RENDER_STEP + 10, showMore(RENDER_STEP + 10, RENDER_STEP))).toBe(0);
  });

  it('reaches back far enough to show a given item, never hiding what is shown', () => {
    expect(shownToInclude(1000, 10, RENDER_STEP)).toBe(990);
    expect(firstShown(1000, shownToInclude(1000, 10, RENDER_STEP))).toBe(10);
    expect(shownToInclude(1000, 990, 500)).toBe(500);
    expect(shownToInclude(1000, -1, RENDER_STEP)).toBe(RENDER_STEP);
  });
});
