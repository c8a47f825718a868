// The desktop preferences (close to tray, start at login, theme): loaded as the app
// starts, so the saved theme applies at once, and saved field by field from Settings.
// A save that fails leaves the preferences in force (and the theme) as they were.

import * as ipc from '../lib/ipc';
import type { DesktopSettings, DesktopSettingsView } from '../lib/protocol';
import type { ThemeController } from './theme';

export class DesktopStore {
  view = $state.raw<DesktopSettingsView | null>(null);
  loadError = $state<string | null>(null);
  #theme: Pick<ThemeController, 'set'>;

  constructor(theme: Pick<ThemeController, 'set'>) {
    this.#theme = theme;
  }

  async load(): Promise<void> {
    try {
      this.view = await ipc.storeRead('get_desktop_settings');
      this.loadError = null;
      this.#theme.set(this.view.settings.theme);
    } catch (e) {
      this.loadError = ipc.toCommandError(e).message;
    }
  }

  /** Saves one change; throws a `CommandError` for the section to show. */
  async change<K extends keyof DesktopSettings>(field: K, value: DesktopSettings[K]): Promise<void> {
    if (!this.view) return;
    const next = { ...this.view.settings, [field]: value };
    this.view = await ipc.saveDesktopSettings(next);
    this.#theme.set(this.view.settings.theme);
  }
}
