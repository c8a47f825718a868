import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { DesktopSettings } from '../lib/protocol';

const backend = vi.hoisted(() => ({
  stored: {} as DesktopSettings,
  failNext: null as { code: string; message: string } | null,
}));

vi.mock('../lib/ipc', () => ({
  storeRead: async (command: string) => {
    expect(command).toBe('get_desktop_settings');
    return { settings: { ...backend.stored }, warnings: ['"theme" should be …'] };
  },
  saveDesktopSettings: async (settings: DesktopSettings) => {
    if (backend.failNext) {
      const e = backend.failNext;
      backend.failNext = null;
      throw e;
    }
    backend.stored = { ...settings };
    return { settings: { ...settings }, warnings: [], workspace_in_use: '/data/workspace' };
  },
  toCommandError: (e: { code: string; message: string }) => e,
}));

const { DesktopStore } = await import('./desktop.svelte');

describe('desktop preferences', () => {
  beforeEach(() => {
    backend.stored = {
      close_to_tray: true,
      start_at_login: false,
      theme: 'dark',
      notifications: { processes: true, routines: true, monitors: true, heartbeat: true, approvals: true },
      workspace: null,
      continuation_limit: 10,
      approval_timeout_secs: 3600,
      keep_awake: true,
      away_after_minutes: 60,
    };
  });

  it('applies the saved theme as it loads and shows the warnings', async () => {
    const theme = { set: vi.fn() };
    const store = new DesktopStore(theme);
    await store.load();
    expect(theme.set).toHaveBeenCalledWith('dark');
    expect(store.view?.warnings).toHaveLength(1);
  });

  it('saves one field, keeps the others, and applies a new theme at once', async () => {
    const theme = { set: vi.fn() };
    const store = new DesktopStore(theme);
    await store.load();
    await store.change('close_to_tray', false);
    expect(backend.stored).toMatchObject({ close_to_tray: false, start_at_login: false, theme: 'dark' });
    await store.change('theme', 'light');
    expect(theme.set).toHaveBeenLastCalledWith('light');
    expect(store.view?.settings).toMatchObject({ close_to_tray: false, start_at_login: false, theme: 'light' });
    await store.change('notifications', { processes: false, routines: true, monitors: true, heartbeat: true, approvals: true });
    expect(backend.stored.notifications.processes).toBe(false);
    expect(backend.stored.theme).toBe('light');
    expect(store.view?.warnings).toEqual([]);
  });

  it('a refused change leaves what is in force', async () => {
    const theme = { set: vi.fn() };
    const store = new DesktopStore(theme);
    await store.load();
    backend.failNext = { code: 'autostart', message: 'Could not change the login items: read-only' };
    await expect(store.change('start_at_login', true)).rejects.toMatchObject({ code: 'autostart' });
    expect(store.view?.settings.start_at_login).toBe(false);
    expect(theme.set).toHaveBeenCalledTimes(1);
  });
});
