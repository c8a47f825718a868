// Reads the unified diff an `edit` call returns (`--- a/…`, `+++ b/…`, `@@` hunks, plus a
// one-line summary) into typed lines for the view to colour.

export type DiffLineKind = 'file' | 'hunk' | 'add' | 'del' | 'context' | 'note';

export interface DiffLine {
  kind: DiffLineKind;
  text: string;
}

/** True when the text holds at least one file header and one hunk. */
export function looksLikeDiff(text: string): boolean {
  return /^@@ /m.test(text) && /^--- /m.test(text) && /^\+\+\+ /m.test(text);
}

/**
 * Classifies each line. A `---`/`+++` pair is a file header only as a pair, so a removed
 * line that happens to start with `--` (a SQL comment) stays a removal.
 */
export function parseDiff(text: string): DiffLine[] {
  const lines = text.replace(/\n$/, '').split('\n');
  const out: DiffLine[] = [];
  let inHunk = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const header =
      (line.startsWith('--- ') && lines[i + 1]?.startsWith('+++ ')) ||
      (line.startsWith('+++ ') && lines[i - 1]?.startsWith('--- ') && out.at(-1)?.kind === 'file');
    let kind: DiffLineKind;
    if (header) {
      kind = 'file';
      inHunk = false;
    } else if (line.startsWith('@@')) {
      kind = 'hunk';
      inHunk = true;
    } else if (inHunk && line.startsWith('+')) {
      kind = 'add';
    } else if (inHunk && line.startsWith('-')) {
      kind = 'del';
    } else if (inHunk && (line.startsWith(' ') || line === '' || line.startsWith('\\'))) {
      kind = 'context';
    } else {
      kind = 'note';
      inHunk = false;
    }
    out.push({ kind, text: line });
  }
  return out;
}

/** Lines added and removed, for the card header. */
export function diffStats(lines: DiffLine[]): { added: number; removed: number } {
  return {
    added: lines.filter((l) => l.kind === 'add').length,
    removed: lines.filter((l) => l.kind === 'del').length,
  };
}
