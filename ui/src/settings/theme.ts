// The colour theme: the user's choice (system / light / dark) resolved against the OS's
// `prefers-color-scheme` into the scheme app.css styles (`<html data-theme>`). Pure parts
// here; `theme.svelte.ts` holds the one live instance.

import type { Theme } from '../lib/protocol';

export type Scheme = 'light' | 'dark';

/** Where the last choice is remembered, so the next start paints in it before settings load. */
export const STORAGE_KEY = 'vigil.theme';

export const THEMES: { value: Theme; label: string }[] = [
  { value: 'system', label: 'Follow the system' },
  { value: 'light', label: 'Light' },
  { value: 'dark', label: 'Dark' },
];

export function isTheme(value: unknown): value is Theme {
  return value === 'system' || value === 'light' || value === 'dark';
}

export function resolveTheme(choice: Theme, systemDark: boolean): Scheme {
  if (choice === 'system') return systemDark ? 'dark' : 'light';
  return choice;
}

/** What the platform gives us, injected so tests need no browser. */
export interface ThemeEnv {
  root: HTMLElement;
  /** `(prefers-color-scheme: dark)`, or null where there is no matchMedia. */
  query: MediaQueryList | null;
  storage: Pick<Storage, 'getItem' | 'setItem'> | null;
}

/**
 * Applies a choice and keeps it applied: with `system` the scheme follows the OS as it
 * changes. `onScheme` hears every change of the resolved scheme.
 */
export class ThemeController {
  #env: ThemeEnv;
  #choice: Theme;
  #scheme: Scheme = 'light';
  #onScheme: (scheme: Scheme) => void;

  constructor(env: ThemeEnv, onScheme: (scheme: Scheme) => void = () => {}) {
    this.#env = env;
    this.#onScheme = onScheme;
    let stored: string | null = null;
    try {
      stored = env.storage?.getItem(STORAGE_KEY) ?? null;
    } catch {
      // Storage can be unavailable; the default will do until settings load.
    }
    this.#choice = isTheme(stored) ? stored : 'system';
    env.query?.addEventListener('change', () => this.#apply());
    this.#apply();
  }

  get choice(): Theme {
    return this.#choice;
  }

  get scheme(): Scheme {
    return this.#scheme;
  }

  set(choice: Theme): void {
    this.#choice = choice;
    try {
      this.#env.storage?.setItem(STORAGE_KEY, choice);
    } catch {
      // Only the first paint of the next start is affected.
    }
    this.#apply();
  }

  #apply(): void {
    const scheme = resolveTheme(this.#choice, this.#env.query?.matches ?? false);
    this.#env.root.dataset.theme = scheme;
    this.#env.root.dataset.themeChoice = this.#choice;
    if (scheme !== this.#scheme) {
      this.#scheme = scheme;
      this.#onScheme(scheme);
    }
  }
}
