import { describe, expect, it } from 'vitest';
import { argumentSummary, usageText } from './content';
import { diffStats, looksLikeDiff, parseDiff } from './diff';

describe('edit diffs', () => {
  it('classifies headers, hunks, additions, removals and the summary line', () => {
    const text = '--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,3 @@\n--- a comment\n+-- a comment\n select 1;\n\nEdited q.sql.';
    expect(looksLikeDiff(text)).toBe(true);
    const lines = parseDiff(text);
    expect(lines.map((l) => l.kind)).toEqual(['file', 'file', 'hunk', 'del', 'add', 'context', 'context', 'note']);
    expect(diffStats(lines)).toEqual({ added: 1, removed: 1 });
  });

  it('does not take plain output for a diff', () => {
    expect(looksLikeDiff('File written (12 lines).')).toBe(false);
  });
});

describe('labels', () => {
  it('summarises arguments by their most telling field', () => {
    expect(argumentSummary({ old_text: 'a', path: 'src/main.rs' })).toBe('src/main.rs');
    expect(argumentSummary({ command: 'ls -la\nrm x' })).toBe('ls -la');
    expect(argumentSummary({ count: 3 })).toBe('');
    expect(argumentSummary({ query: 'x'.repeat(100) })).toHaveLength(72);
  });

  it('formats usage', () => {
    expect(usageText({ input_tokens: 1234, output_tokens: 56 })).toBe('1,234 in · 56 out tokens');
  });
});
