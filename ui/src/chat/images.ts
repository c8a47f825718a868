// Images stored with a conversation, as URLs the page can show: fetched from the app
// (`image_blob`) and kept as object URLs while a thumbnail on screen holds them. Kept for
// the life of the window, every image of every conversation looked at stayed in the page;
// now the last thumbnail to let go (scrolled out of a long chat, another conversation
// opened) frees its bytes, and showing it again fetches it again. An image is named by its
// hash, so a URL never goes stale while it is held.

import * as ipc from '../lib/ipc';
import type { ContentBlock } from '../lib/protocol';

/** An image block of a message: what names a stored image. */
export interface ImageRef {
  sha256: string;
  mime: string;
}

/** The image blocks of a message, in order. */
export function imagesOf(content: ContentBlock[]): ImageRef[] {
  return content.flatMap((b) => (b.type === 'image' ? [{ sha256: b.sha256, mime: b.mime }] : []));
}

/**
 * The images that belong to each `tool_result` of a results message (the image blocks after
 * it, up to the next result), by call id.
 */
export function resultImages(content: ContentBlock[]): Map<string, ImageRef[]> {
  const out = new Map<string, ImageRef[]>();
  let call: string | null = null;
  for (const b of content) {
    if (b.type === 'tool_result') call = b.tool_use_id;
    else if (b.type === 'image' && call !== null) out.set(call, [...(out.get(call) ?? []), { sha256: b.sha256, mime: b.mime }]);
  }
  return out;
}

/** Object URLs of stored images, with how many thumbnails hold each. */
const held = new Map<string, { url: Promise<string>; holders: number }>();

/** A stored image's object URL, kept until `release` (once per hold). */
export interface HeldImage {
  /** Rejects (and is asked again by the next hold) if it cannot be had. */
  url: Promise<string>;
  release: () => void;
}

/** Holds an object URL for a stored image; the last release frees it. */
export function holdImage(sessionId: string, image: ImageRef): HeldImage {
  const key = `${sessionId}/${image.sha256}`;
  let entry = held.get(key);
  if (!entry) {
    const created = {
      url: ipc.imageBlob(sessionId, image.sha256, image.mime).then((bytes) => URL.createObjectURL(new Blob([bytes], { type: image.mime }))),
      holders: 0,
    };
    created.url.catch(() => {
      if (held.get(key) === created) held.delete(key);
    });
    held.set(key, created);
    entry = created;
  }
  const mine = entry;
  mine.holders += 1;
  let released = false;
  return {
    url: mine.url,
    release: () => {
      if (released) return;
      released = true;
      mine.holders -= 1;
      // After the current update: a thumbnail redrawn lets go and holds again in one go.
      queueMicrotask(() => {
        if (mine.holders > 0 || held.get(key) !== mine) return;
        held.delete(key);
        mine.url.then(URL.revokeObjectURL, () => {});
      });
    },
  };
}
