// The options of a process's xterm.js terminal, apart from the component so a test can check
// what every terminal is made with (xterm itself needs a real layout to run).

import type { ITerminalOptions } from '@xterm/xterm';
import { terminalLinkHandler } from '../lib/links';
import { terminalTheme } from './theme';

export function terminalOptions(opts: {
  /** The font family (the app's `--mono`). */
  font: string;
  running: boolean;
  /** Whether the process has a pseudo-terminal (one without needs "\n" made "\r\n"). */
  pty: boolean;
  dark: boolean;
  /** Told what happened when an OSC 8 hyperlink was clicked (the address was copied). */
  onLinkNote: (note: string) => void;
}): ITerminalOptions {
  return {
    scrollback: 5000,
    fontFamily: opts.font,
    fontSize: 13,
    lineHeight: 1.15,
    cursorBlink: opts.running,
    disableStdin: !opts.running,
    // Without a terminal nothing turns "\n" into "\r\n" for the program.
    convertEol: !opts.pty,
    theme: terminalTheme(opts.dark),
    // A program's OSC 8 link is followed like a link in a reply: copied, never opened in the
    // app's window (xterm's default asks `confirm()` and then calls `window.open`).
    linkHandler: terminalLinkHandler(opts.onLinkNote),
  };
}
