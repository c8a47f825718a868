// Which images the composer takes (the core's types and its 20 MB cap), what it says about
// the others, and where pasted or dropped files are found.
import { describe, expect, it } from 'vitest';
import { filesOf, MAX_IMAGE_BYTES, refusal, sortFiles } from './attachments';

function file(name: string, type: string, size = 10): File {
  const f = new File([new Uint8Array(Math.min(size, 16))], name, { type });
  if (size > 16) Object.defineProperty(f, 'size', { value: size });
  return f;
}

describe('composer images', () => {
  it('takes PNG, JPEG, GIF and WebP up to 20 MB', () => {
    for (const type of ['image/png', 'image/jpeg', 'image/gif', 'image/webp']) {
      expect(refusal(file('a', type, MAX_IMAGE_BYTES))).toBeNull();
    }
  });

  it('says why another file is not taken, naming it', () => {
    expect(refusal(file('diagram.svg', 'image/svg+xml'))).toBe('diagram.svg is not a PNG, JPEG, GIF or WebP image.');
    expect(refusal(file('notes.pdf', 'application/pdf'))).toBe('notes.pdf is not a PNG, JPEG, GIF or WebP image.');
    expect(refusal(file('huge.png', 'image/png', 23_400_000))).toBe('huge.png is 23.4 MB; images up to 20 MB can be sent.');
    expect(refusal(file('', 'image/bmp'))).toBe('The pasted image is not a PNG, JPEG, GIF or WebP image.');
  });

  it('keeps the good files of a mixed drop and reports the rest in one line', () => {
    const good = file('a.png', 'image/png');
    const { taken, problem } = sortFiles([good, file('b.tiff', 'image/tiff'), file('c.txt', 'text/plain')]);
    expect(taken).toEqual([good]);
    expect(problem).toBe('b.tiff is not a PNG, JPEG, GIF or WebP image. c.txt is not a PNG, JPEG, GIF or WebP image.');
  });

  it('finds a pasted screenshot among the clipboard items when there is no file list', () => {
    const shot = file('image.png', 'image/png');
    const clipboard = {
      files: [] as File[],
      items: [
        { kind: 'string', getAsFile: () => null },
        { kind: 'file', getAsFile: () => shot },
      ],
      types: ['text/plain', 'Files'],
    } as unknown as DataTransfer;
    expect(filesOf(clipboard)).toEqual([shot]);
    expect(filesOf(null)).toEqual([]);
  });
});
