// Vite + Vitest config for Vigil's web UI. Run from the repository root through the npm
// scripts (`ui:build`, `ui:test`); paths are resolved from this file so the cwd does not matter.
import { fileURLToPath } from 'node:url';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { defineConfig } from 'vitest/config';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  // Tauri serves the bundle from its own origin; relative paths keep it location-independent.
  base: './',
  plugins: [svelte()],
  // Tauri's dev server is fixed in tauri.conf.json (`devUrl`).
  server: { port: 5173, strictPort: true },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
  },
  test: {
    environment: 'jsdom',
    include: ['src/**/*.test.ts'],
    // Read as text by typescale.test.ts (vitest empties the stylesheets it does not include).
    css: { include: [/src\/app\.css/] },
  },
});
