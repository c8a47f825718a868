import { describe, expect, it } from 'vitest';
import { isTheme, resolveTheme, STORAGE_KEY, ThemeController, type Scheme, type ThemeEnv } from './theme';

/** A `prefers-color-scheme: dark` query whose answer the test flips. */
function fakeQuery(dark: boolean) {
  const listeners: (() => void)[] = [];
  const query = {
    matches: dark,
    addEventListener: (_: string, l: () => void) => listeners.push(l),
  } as unknown as MediaQueryList;
  const flip = (next: boolean) => {
    (query as { matches: boolean }).matches = next;
    listeners.forEach((l) => l());
  };
  return { query, flip };
}

function env(dark: boolean, stored: string | null = null) {
  const data = new Map<string, string>(stored === null ? [] : [[STORAGE_KEY, stored]]);
  const storage = { getItem: (k: string) => data.get(k) ?? null, setItem: (k: string, v: string) => void data.set(k, v) };
  const { query, flip } = fakeQuery(dark);
  const root = document.createElement('html');
  const e: ThemeEnv = { root, query, storage };
  return { e, root, flip, data };
}

describe('theme', () => {
  it('resolves a choice against the system', () => {
    expect(resolveTheme('system', true)).toBe('dark');
    expect(resolveTheme('system', false)).toBe('light');
    expect(resolveTheme('light', true)).toBe('light');
    expect(resolveTheme('dark', false)).toBe('dark');
    expect(isTheme('dark')).toBe(true);
    expect(isTheme('purple')).toBe(false);
  });

  it('follows the OS while on system, and stops following once a theme is chosen', () => {
    const { e, root, flip, data } = env(false);
    const heard: Scheme[] = [];
    const c = new ThemeController(e, (s) => heard.push(s));
    expect(root.dataset.theme).toBe('light');
    flip(true);
    expect(root.dataset.theme).toBe('dark');
    c.set('light');
    expect(root.dataset.theme).toBe('light');
    expect(root.dataset.themeChoice).toBe('light');
    expect(data.get(STORAGE_KEY)).toBe('light');
    flip(false);
    flip(true);
    expect(root.dataset.theme).toBe('light');
    c.set('system');
    expect(root.dataset.theme).toBe('dark');
    expect(heard).toEqual(['dark', 'light', 'dark']);
  });

  it('paints the remembered choice before settings load, and ignores junk', () => {
    expect(new ThemeController(env(false, 'dark').e).scheme).toBe('dark');
    expect(new ThemeController(env(true, 'purple').e).choice).toBe('system');
    expect(new ThemeController(env(true, 'purple').e).scheme).toBe('dark');
  });
});
