// The settings the core reports (`SettingsView`), shared by the pane and the status bar.

import * as ipc from '../lib/ipc';
import type { ProviderSettings, SettingsView } from '../lib/protocol';

export class SettingsStore {
  view = $state.raw<SettingsView | null>(null);
  loadError = $state<string | null>(null);
  open = $state(false);
  /** A section to show when the pane opens (`heartbeat` from the status bar), then cleared. */
  section = $state<'heartbeat' | null>(null);

  async load(): Promise<void> {
    try {
      this.view = await ipc.storeRead('get_settings');
      this.loadError = null;
    } catch (e) {
      this.loadError = ipc.toCommandError(e).message;
    }
  }

  /** Throws a `CommandError` for the form to show. */
  async save(provider: ProviderSettings, apiKey: string | null): Promise<SettingsView> {
    const view = await ipc.saveSettings(provider, apiKey);
    this.view = view;
    return view;
  }
}
