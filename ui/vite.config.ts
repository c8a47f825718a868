// Vite + Vitest config for Vigil's web UI. Run from the repository root through the npm
// scripts (`ui:build`, `ui:test`); paths are resolved from this file so the cwd does not matter.
import { fileURLToPath } from 'node:url';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import type { Plugin } from 'vite';
import { defineConfig } from 'vitest/config';

const root = fileURLToPath(new URL('.', import.meta.url));

// The window's start-up fetches as little as it can. Each file the page loads is a request
// to the app over its custom protocol, and WebKit runs no script before the stylesheets are
// in. Split into the entry, five small chunks shared with the lazy panes and two stylesheets,
// the page's script started ~85 ms after navigation; as one chunk (`start`) with its
// stylesheet inlined into index.html (the CSP allows inline styles), ~50 ms (release build,
// performance marks, alternating launches). The panes, the terminal and the mock still load
// on demand and import what they share from `start`.

/** True for a module the entry reaches through static imports only: one the window starts with. */
function startsWithWindow(id: string, info: (id: string) => { importers: readonly string[] } | null): boolean {
  const seen = new Set<string>();
  const reaches = (m: string): boolean => {
    if (m.endsWith('/src/main.ts')) return true;
    if (seen.has(m)) return false;
    seen.add(m);
    return (info(m)?.importers ?? []).some(reaches);
  };
  return reaches(id);
}

/** Puts the start chunk's stylesheet into index.html instead of linking it. */
function inlineStartCss(): Plugin {
  return {
    name: 'vigil-inline-start-css',
    apply: 'build',
    enforce: 'post',
    generateBundle(_options, bundle) {
      const html = bundle['index.html'];
      if (html?.type !== 'asset') return;
      html.source = String(html.source).replace(
        /<link rel="stylesheet"[^>]* href="\.\/(assets\/[^"]+\.css)">/g,
        (link, file: string) => {
          const css = bundle[file];
          if (css?.type !== 'asset') return link;
          delete bundle[file];
          return `<style>${String(css.source)}</style>`;
        },
      );
    },
  };
}

export default defineConfig({
  root,
  // Tauri serves the bundle from its own origin; relative paths keep it location-independent.
  base: './',
  plugins: [svelte(), inlineStartCss()],
  // Components mounted in unit tests need Svelte's client runtime, not its server one.
  resolve: process.env.VITEST ? { conditions: ['browser'] } : undefined,
  // Tauri's dev server is fixed in tauri.conf.json (`devUrl`).
  server: { port: 5173, strictPort: true },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    rolldownOptions: {
      output: {
        codeSplitting: {
          groups: [
            {
              debugName: 'start',
              name: (id, ctx) => (startsWithWindow(id, (m) => ctx.getModuleInfo(m)) ? 'start' : null),
            },
          ],
        },
      },
    },
  },
  test: {
    environment: 'jsdom',
    include: ['src/**/*.test.ts'],
    // Read as text by typescale.test.ts (vitest empties the stylesheets it does not include).
    css: { include: [/src\/app\.css/] },
  },
});
