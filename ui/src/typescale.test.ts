// Sizes and weights come from app.css's type scale: each literal one is another font for
// WebKitGTK to open in the window's first layout (~9 ms each; see the comment on the scale).
import { expect, it } from 'vitest';

const sources = import.meta.glob<string>(['./**/*.svelte', './**/*.css'], { query: '?raw', import: 'default', eager: true });

it('every font size and weight in the UI comes from the type scale', () => {
  expect(Object.keys(sources).length).toBeGreaterThan(20);
  const literal: string[] = [];
  for (const [file, text] of Object.entries(sources)) {
    text.split('\n').forEach((line, i) => {
      const m = line.match(/font-(size|weight)\s*:\s*([^;]+);/);
      if (m && !/^var\(--(text|weight)-[a-z0-9]+\)$|^inherit$/.test(m[2].trim())) {
        literal.push(`${file}:${i + 1}: ${line.trim()}`);
      }
    });
  }
  expect(literal).toEqual([]);
});

it('the scale defines every step the components use', () => {
  const defined = new Set([...sources['./app.css'].matchAll(/(--(?:text|weight)-[a-z0-9]+):/g)].map((m) => m[1]));
  const used = new Set(
    Object.values(sources).flatMap((text) => [...text.matchAll(/var\((--(?:text|weight)-[a-z0-9]+)\)/g)].map((m) => m[1])),
  );
  expect(used.size).toBeGreaterThan(5);
  expect([...used].filter((v) => !defined.has(v))).toEqual([]);
});
