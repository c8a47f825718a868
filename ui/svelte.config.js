// Read by both vite-plugin-svelte and svelte-check.
export default {
  compilerOptions: {
    // Svelte 5 runes everywhere; legacy `let`-reactivity is a compile error.
    runes: true,
  },
};
