// A hook for end-to-end tests: `window.__vigilTerminalText(id)` returns the text of the
// terminal showing process `id` (scrollback and screen, wrapped lines joined), or "" when
// no terminal shows it. Reading the DOM would miss the scrollback and depend on the renderer.

import type { Terminal } from '@xterm/xterm';

declare global {
  interface Window {
    __vigilTerminalText?: (processId: string) => string;
  }
}

const terminals = new Map<string, Terminal>();

function bufferText(term: Terminal): string {
  const buffer = term.buffer.active;
  const lines: string[] = [];
  for (let i = 0; i < buffer.length; i++) {
    const line = buffer.getLine(i);
    if (!line) continue;
    const text = line.translateToString(true);
    if (line.isWrapped && lines.length > 0) lines[lines.length - 1] += text;
    else lines.push(text);
  }
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines.join('\n');
}

/** Makes `term` readable by the hook while it shows `processId`; returns the undo. */
export function registerTerminal(processId: string, term: Terminal): () => void {
  terminals.set(processId, term);
  window.__vigilTerminalText ??= (id: string) => {
    const t = terminals.get(id);
    return t ? bufferText(t) : '';
  };
  return () => {
    if (terminals.get(processId) === term) terminals.delete(processId);
  };
}
