// Images stored with a conversation, as URLs the page can show: fetched once per image from
// the app (`image_blob`) and kept as object URLs for the life of the window. An image is
// named by its hash, so a cached URL never goes stale.

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

const urls = new Map<string, Promise<string>>();

/** An object URL for a stored image; rejects (and is asked again next time) if it cannot be had. */
export function imageUrl(sessionId: string, image: ImageRef): Promise<string> {
  const key = `${sessionId}/${image.sha256}`;
  let url = urls.get(key);
  if (!url) {
    url = ipc
      .imageBlob(sessionId, image.sha256, image.mime)
      .then((bytes) => URL.createObjectURL(new Blob([bytes], { type: image.mime })));
    url.catch(() => urls.delete(key));
    urls.set(key, url);
  }
  return url;
}
