// The composer with images: paste, drop and the attach button add removable thumbnails;
// a file it cannot send is named with why; the images go with the text; and a message whose
// images the core refused comes back, with the reason, to fix.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, tick, unmount } from 'svelte';
import Composer from './Composer.svelte';

let mounted: Record<string, unknown>[] = [];

beforeEach(() => {
  let n = 0;
  // jsdom has no object URLs.
  URL.createObjectURL = vi.fn(() => `blob:thumb-${++n}`);
  URL.revokeObjectURL = vi.fn();
});

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

function png(name = 'shot.png', size = 100): File {
  const f = new File([new Uint8Array(8)], name, { type: 'image/png' });
  Object.defineProperty(f, 'size', { value: size });
  return f;
}

type Props = {
  onSend: (text: string, images: File[]) => Promise<boolean>;
  error?: string | null;
  onDismissError?: () => void;
};

function show(props: Partial<Props> = {}) {
  const target = document.createElement('div');
  document.body.append(target);
  const state = $state({ busy: false, onSend: vi.fn(async () => true), onStop: vi.fn(), error: null, ...props });
  mounted.push(mount(Composer, { target, props: state }));
  flushSync();
  return { root: target, props: state };
}

const q = (root: HTMLElement, id: string) => root.querySelector<HTMLElement>(`[data-testid="${id}"]`);
const all = (root: HTMLElement, id: string) => [...root.querySelectorAll<HTMLElement>(`[data-testid="${id}"]`)];

function paste(root: HTMLElement, files: File[]): void {
  const event = new Event('paste', { bubbles: true, cancelable: true });
  Object.defineProperty(event, 'clipboardData', { value: { files, items: [], types: ['Files'] } });
  q(root, 'chat-input')!.dispatchEvent(event);
  flushSync();
}

function drop(root: HTMLElement, files: File[]): void {
  const box = q(root, 'chat-input')!.closest('.box')!;
  const event = new Event('drop', { bubbles: true, cancelable: true });
  Object.defineProperty(event, 'dataTransfer', { value: { files, items: [], types: ['Files'] } });
  box.dispatchEvent(event);
  flushSync();
}

function type(root: HTMLElement, text: string): void {
  const area = q(root, 'chat-input') as HTMLTextAreaElement;
  area.value = text;
  area.dispatchEvent(new Event('input', { bubbles: true }));
  flushSync();
}

describe('the composer with images', () => {
  it('a pasted image waits as a thumbnail that can be removed', () => {
    const { root } = show();
    paste(root, [png()]);
    expect(all(root, 'composer-image')).toHaveLength(1);
    expect(root.querySelector<HTMLImageElement>('[data-testid="composer-image"] img')!.src).toBe('blob:thumb-1');
    q(root, 'remove-image')!.click();
    flushSync();
    expect(all(root, 'composer-image')).toHaveLength(0);
    expect(URL.revokeObjectURL).toHaveBeenCalledWith('blob:thumb-1');
  });

  it('a dropped file it cannot send is named with why, the good ones are kept', () => {
    const { root } = show();
    drop(root, [png('a.png'), new File(['x'], 'b.bmp', { type: 'image/bmp' }), png('big.png', 21_500_000)]);
    expect(all(root, 'composer-image')).toHaveLength(1);
    expect(q(root, 'composer-error')!.textContent).toContain(
      'b.bmp is not a PNG, JPEG, GIF or WebP image. big.png is 21.5 MB; images up to 20 MB can be sent.',
    );
  });

  it('the attach button opens a picker for the four image types', () => {
    const { root } = show();
    const picker = q(root, 'image-picker') as HTMLInputElement;
    const click = vi.spyOn(picker, 'click');
    q(root, 'attach')!.click();
    expect(click).toHaveBeenCalled();
    expect(picker.accept).toBe('image/png,image/jpeg,image/gif,image/webp');
    expect(picker.multiple).toBe(true);
  });

  it('sends the images with the text, and an image alone', async () => {
    const onSend = vi.fn(async () => true);
    const { root } = show({ onSend });
    const shot = png();
    paste(root, [shot]);
    type(root, 'what is this?');
    q(root, 'send')!.click();
    await tick();
    expect(onSend).toHaveBeenCalledWith('what is this?', [shot]);
    flushSync();
    expect(all(root, 'composer-image')).toHaveLength(0);
    const other = png('other.png');
    paste(root, [other]);
    expect((q(root, 'send') as HTMLButtonElement).disabled).toBe(false);
    q(root, 'send')!.click();
    await tick();
    expect(onSend).toHaveBeenLastCalledWith('', [other]);
  });

  it('a message whose images the core refused comes back with the reason', async () => {
    const onDismissError = vi.fn();
    const { root, props } = show({ onDismissError });
    paste(root, [png('broken.png')]);
    type(root, 'look');
    q(root, 'send')!.click();
    await tick();
    flushSync();
    expect(all(root, 'composer-image')).toHaveLength(0);
    props.error = 'Cannot send this image: broken.png could not be read as a PNG image. The message was not sent.';
    flushSync();
    await tick();
    expect(q(root, 'composer-error')!.textContent).toContain('broken.png could not be read as a PNG image');
    expect((q(root, 'chat-input') as HTMLTextAreaElement).value).toBe('look');
    expect(all(root, 'composer-image')).toHaveLength(1);
    (root.querySelector('.attach-error .dismiss') as HTMLButtonElement).click();
    expect(onDismissError).toHaveBeenCalled();
  });
});
