import { describe, expect, it } from 'vitest';
import { concat, decodeBase64, joinReplay, OutputBuffer } from './output';

const enc = new TextEncoder();
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const bytes = (s: string) => enc.encode(s);

describe('output buffers', () => {
  it('decodes base64 into raw bytes, split UTF-8 characters included', () => {
    const euro = bytes('€'); // e2 82 ac
    const first = decodeBase64(btoa(String.fromCharCode(euro[0], euro[1])));
    const second = decodeBase64(btoa(String.fromCharCode(euro[2])));
    expect([...first]).toEqual([0xe2, 0x82]);
    expect(dec(concat([first, second]))).toBe('€');
  });

  it('keeps chunks in order', () => {
    const b = new OutputBuffer(true, 100);
    for (const s of ['one\r\n', 'two', '\r\n', 'three']) b.push(bytes(s));
    expect(dec(b.bytes())).toBe('one\r\ntwo\r\nthree');
    expect(b.size).toBe(15);
    expect(b.dropped).toBe(0);
  });

  it('stays within its cap, dropping the oldest bytes and starting on a line', () => {
    const b = new OutputBuffer(true, 64);
    for (let i = 0; i < 40; i++) b.push(bytes(`line ${String(i).padStart(2, '0')}\n`));
    expect(b.size).toBeLessThanOrEqual(64);
    const text = dec(b.bytes());
    expect(text.endsWith('line 39\n')).toBe(true);
    expect(text.startsWith('line ')).toBe(true);
    expect(b.dropped + b.size).toBe(40 * 8);
  });

  it('cuts inside a chunk when there is no newline to start on', () => {
    const b = new OutputBuffer(true, 10);
    b.push(bytes('abcdefghijklmnop'));
    expect(dec(b.bytes())).toBe('ghijklmnop');
  });

  it('stays bounded with a megabyte cap under a flood', () => {
    const b = new OutputBuffer(true);
    const chunk = new Uint8Array(4000).fill(0x41);
    for (let i = 0; i < 1000; i++) b.push(chunk);
    expect(b.size).toBeLessThanOrEqual(1024 * 1024);
    expect(b.size).toBeGreaterThan(1024 * 1024 - 4000);
  });

  it('joins a replay with the output that came while it was fetched', () => {
    const during = [bytes('C'), bytes('D'), bytes('E')];
    // The core took its copy after C and D.
    expect(dec(concat(joinReplay(bytes('ABCD'), during)))).toBe('ABCDE');
    // Before any of them.
    expect(dec(concat(joinReplay(bytes('AB'), during)))).toBe('ABCDE');
    // After all of them.
    expect(dec(concat(joinReplay(bytes('ABCDE'), during)))).toBe('ABCDE');
    expect(dec(concat(joinReplay(bytes('AB'), [])))).toBe('AB');
  });
});
