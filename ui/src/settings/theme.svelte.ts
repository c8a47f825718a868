// The app's one theme controller, created as the UI starts so the first paint already
// uses the last choice; `appearance.scheme` is reactive for components that need colours
// as values (the terminal).

import { ThemeController, type Scheme } from './theme';

export const appearance = $state<{ scheme: Scheme }>({ scheme: 'light' });

export const theme = new ThemeController(
  {
    root: document.documentElement,
    query: typeof matchMedia === 'function' ? matchMedia('(prefers-color-scheme: dark)') : null,
    storage: typeof localStorage === 'undefined' ? null : localStorage,
  },
  (scheme) => (appearance.scheme = scheme),
);
appearance.scheme = theme.scheme;
