// The banner a held HEARTBEAT.md shows: the core's reason, and Trust reaches the store once
// (disabled while it is on its way); Review asks for the routines to be shown.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import HeldBanner from './HeldBanner.svelte';

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

const MESSAGE =
  'HEARTBEAT.md was replaced while a sandboxed command was running; its routines wait for you: review the file, then Trust it.';

describe('HeldBanner', () => {
  it('says why the routines wait, and Trust and Review reach their handlers', async () => {
    let release: () => void = () => {};
    const onTrust = vi.fn(() => new Promise<void>((r) => (release = r)));
    const onReview = vi.fn();
    mounted.push(mount(HeldBanner, { target: document.body, props: { message: MESSAGE, onTrust, onReview } }));
    const banner = document.querySelector('[data-testid="routines-held"]')!;
    expect(banner.textContent).toContain(MESSAGE);
    expect(banner.textContent).toContain('None of the routines below runs until you trust the file');
    const trust = document.querySelector<HTMLButtonElement>('[data-testid="routines-held-trust"]')!;
    trust.click();
    flushSync();
    expect(onTrust).toHaveBeenCalledTimes(1);
    expect(trust.disabled).toBe(true);
    trust.click();
    expect(onTrust).toHaveBeenCalledTimes(1);
    release();
    await Promise.resolve();
    await Promise.resolve();
    flushSync();
    expect(trust.disabled).toBe(false);
    document.querySelector<HTMLButtonElement>('[data-testid="routines-held-review"]')!.click();
    expect(onReview).toHaveBeenCalledTimes(1);
  });
});
