// The app runs with Tauri's `freezePrototype` (see chat/frozen.test.ts); xterm.js must parse
// output under it. Unopened, so no renderer is needed in jsdom.
import { describe, expect, it } from 'vitest';

describe('xterm.js with a frozen Object.prototype', () => {
  it('parses colours, split UTF-8 and carriage returns', async () => {
    // jsdom has no canvas; xterm.js only uses one for colour parsing, which the test skips.
    HTMLCanvasElement.prototype.getContext = () => null;
    Object.freeze(Object.prototype);
    const { Terminal } = await import('@xterm/xterm');
    const term = new Terminal({ cols: 40, rows: 5, scrollback: 10, allowProposedApi: true });
    const euro = new TextEncoder().encode('€');
    const write = (data: Uint8Array | string) => new Promise<void>((r) => term.write(data, r));
    await write('\x1b[32mgreen\x1b[0m ');
    await write(euro.subarray(0, 2));
    await write(euro.subarray(2));
    await write('\r\n[====    ] 50%\r[========] 100%\r\n');
    const line = (i: number) => term.buffer.active.getLine(i)?.translateToString(true);
    expect([line(0), line(1)]).toEqual(['green €', '[========] 100%']);
    expect(term.buffer.active.getLine(0)?.getCell(0)?.getFgColor()).toBe(2);
    term.dispose();
  });
});
