// Thumbnails of stored images: fetched from the app by the conversation's id, shown small,
// opened full size on a click and closed with Escape; a missing file shows as a tile; an
// image no thumbnail shows any more is let go, and fetched again when it shows again.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, tick, unmount } from 'svelte';
import * as ipc from '../lib/ipc';
import ImageThumbs from './ImageThumbs.svelte';

let mounted: Record<string, unknown>[] = [];

beforeEach(() => {
  URL.createObjectURL = vi.fn((blob: Blob) => `blob:${(blob as Blob).type}-${(blob as Blob).size}`);
  URL.revokeObjectURL = vi.fn();
});

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
  vi.restoreAllMocks();
});

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await tick();
    await Promise.resolve();
  }
  flushSync();
}

describe('image thumbnails', () => {
  it('shows each stored image and opens it full size', async () => {
    const blob = vi.spyOn(ipc, 'imageBlob').mockImplementation(async (_s, sha) => new Uint8Array(sha === 'a'.repeat(64) ? 3 : 5).buffer);
    const target = document.createElement('div');
    document.body.append(target);
    const context = new Map([['vigil-session', () => 'chat-7']]);
    mounted.push(
      mount(ImageThumbs, {
        target,
        context,
        props: { images: [{ sha256: 'a'.repeat(64), mime: 'image/png' }, { sha256: 'b'.repeat(64), mime: 'image/jpeg' }] },
      }),
    );
    await settle();
    expect(blob).toHaveBeenCalledWith('chat-7', 'a'.repeat(64), 'image/png');
    const thumbs = [...target.querySelectorAll<HTMLButtonElement>('[data-testid="image-thumb"]')];
    expect(thumbs.map((t) => t.querySelector('img')!.getAttribute('src'))).toEqual(['blob:image/png-3', 'blob:image/jpeg-5']);
    thumbs[1].click();
    flushSync();
    const full = document.querySelector<HTMLImageElement>('[data-testid="lightbox-image"]');
    expect(full?.getAttribute('src')).toBe('blob:image/jpeg-5');
    window.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape' }));
    flushSync();
    expect(document.querySelector('[data-testid="lightbox"]')).toBeNull();
  });

  it('an image whose file is gone shows as a tile, not a broken picture', async () => {
    vi.spyOn(ipc, 'imageBlob').mockRejectedValue({ code: 'not_found', message: "this image's file is missing" });
    const target = document.createElement('div');
    document.body.append(target);
    mounted.push(mount(ImageThumbs, { target, props: { images: [{ sha256: 'c'.repeat(64), mime: 'image/png' }] } }));
    await settle();
    expect(target.querySelector('[data-testid="image-thumb"]')).toBeNull();
    expect(target.querySelector('[data-testid="image-thumb-missing"]')?.textContent).toBe('image unavailable');
  });

  it('an image no thumbnail shows any more is let go, and fetched again when it shows again', async () => {
    const blob = vi.spyOn(ipc, 'imageBlob').mockImplementation(async () => new Uint8Array(3).buffer);
    const images = [{ sha256: 'd'.repeat(64), mime: 'image/png' }];
    const show = () => {
      const target = document.createElement('div');
      document.body.append(target);
      return mount(ImageThumbs, { target, props: { images } });
    };
    const first = show();
    const second = show();
    await settle();
    expect(blob).toHaveBeenCalledTimes(1);
    unmount(first);
    await settle();
    expect(URL.revokeObjectURL).not.toHaveBeenCalled();
    unmount(second);
    await settle();
    expect(URL.revokeObjectURL).toHaveBeenCalledWith('blob:image/png-3');
    mounted.push(show());
    await settle();
    expect(blob).toHaveBeenCalledTimes(2);
    expect(document.querySelector('[data-testid="image-thumb"] img')?.getAttribute('src')).toBe('blob:image/png-3');
  });
});
