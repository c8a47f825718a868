// Settings → Desktop → Working on its own: continuing after a background command (on/off and
// how many turns in a row), how long an unattended approval waits, and keeping the computer
// awake, each saved as it changes.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import type { DesktopSettings, DesktopSettingsView } from '../lib/protocol';
import DesktopSection from './DesktopSection.svelte';
import type { DesktopStore } from './desktop.svelte';

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

const settings: DesktopSettings = {
  close_to_tray: true,
  start_at_login: false,
  theme: 'system',
  notifications: { processes: true, routines: true, monitors: true, heartbeat: true, approvals: true },
  workspace: null,
  continuation_limit: 10,
  approval_timeout_secs: 3600,
  keep_awake: true,
  away_after_minutes: 60,
};

function show(patch: Partial<DesktopSettings> = {}, problem?: string) {
  const view: DesktopSettingsView = {
    settings: { ...settings, ...patch },
    warnings: [],
    workspace_in_use: '/data/workspace',
    keep_awake_problem: problem,
  };
  const change = vi.fn(async () => {});
  const store = { view, loadError: null, change, load: async () => {} } as unknown as DesktopStore;
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(mount(DesktopSection, { target, props: { store } }));
  flushSync();
  const el = <T extends HTMLElement>(id: string) => target.querySelector<T>(`[data-testid="${id}"]`);
  return { target, change, el };
}

function setNumber(input: HTMLInputElement, value: string): void {
  input.value = value;
  input.dispatchEvent(new Event('change', { bubbles: true }));
  flushSync();
}

/** The save resolved and the controls are enabled again. */
async function saved(): Promise<void> {
  await new Promise((r) => setTimeout(r, 0));
  flushSync();
}

describe('working on its own, in Settings', () => {
  it('shows what is in force: on, 10 turns, 60 minutes, keep awake', () => {
    const { el } = show();
    expect(el<HTMLInputElement>('settings-continue')!.checked).toBe(true);
    expect(el<HTMLInputElement>('settings-continuation-limit')!.value).toBe('10');
    expect(el<HTMLInputElement>('settings-approval-timeout')!.value).toBe('60');
    expect(el<HTMLInputElement>('settings-keep-awake')!.checked).toBe(true);
    expect(el('settings-autonomy')!.textContent).toMatch(/Keep the computer awake while Vigil works/);
  });

  it('turns continuing off (limit 0) and saves a new limit and timeout', async () => {
    const { el, change } = show();
    setNumber(el<HTMLInputElement>('settings-continuation-limit')!, '5');
    expect(change).toHaveBeenLastCalledWith('continuation_limit', 5);
    await saved();
    setNumber(el<HTMLInputElement>('settings-approval-timeout')!, '30');
    expect(change).toHaveBeenLastCalledWith('approval_timeout_secs', 1800);
    await saved();
    el<HTMLInputElement>('settings-continue')!.click();
    expect(change).toHaveBeenLastCalledWith('continuation_limit', 0);
    await saved();
    el<HTMLInputElement>('settings-keep-awake')!.click();
    expect(change).toHaveBeenLastCalledWith('keep_awake', false);
  });

  it('turned on again, it goes back to the last limit; off, the limit field is gone', () => {
    const { el, change } = show({ continuation_limit: 0 });
    expect(el('settings-continuation-limit')).toBeNull();
    el<HTMLInputElement>('settings-continue')!.click();
    expect(change).toHaveBeenLastCalledWith('continuation_limit', 10);
  });

  it('says why the computer cannot be kept awake, while keeping awake is on', () => {
    const why = 'The system bus has no systemd-logind (org.freedesktop.login1), so Vigil cannot keep the computer awake while work runs.';
    expect(show({}, why).el('settings-keep-awake-problem')!.textContent).toBe(why);
    document.body.innerHTML = '';
    expect(show({ keep_awake: false }, why).el('settings-keep-awake-problem')).toBeNull();
    expect(show().el('settings-keep-awake-problem')).toBeNull();
  });

  it('refuses a timeout of 0 minutes and says why, saving nothing', () => {
    const { el, change } = show();
    setNumber(el<HTMLInputElement>('settings-approval-timeout')!, '0');
    expect(change).not.toHaveBeenCalled();
    expect(el('settings-approval-timeout-error')!.textContent).toMatch(/from 1 to 1440/);
  });

  it('saves the absence before the "While you were away" card, in minutes, and refuses 0', async () => {
    const { el, change } = show();
    expect(el<HTMLInputElement>('settings-away-after')!.value).toBe('60');
    setNumber(el<HTMLInputElement>('settings-away-after')!, '0');
    expect(change).not.toHaveBeenCalled();
    expect(el('settings-away-after-error')!.textContent).toMatch(/from 1 to 1440/);
    setNumber(el<HTMLInputElement>('settings-away-after')!, '90');
    expect(change).toHaveBeenLastCalledWith('away_after_minutes', 90);
    expect(el('settings-away-after-error')).toBeNull();
    await saved();
  });
});

describe('searching past conversations, in Settings', () => {
  it('keeps heartbeat runs out of the agent’s searches when switched on, and shows what is in force', async () => {
    const { el, change } = show();
    const box = el<HTMLInputElement>('settings-search-skips-heartbeats')!;
    expect(box.checked).toBe(false);
    expect(el('settings-memory')!.textContent).toMatch(/Keep heartbeat runs out of the agent's searches/);
    box.click();
    expect(change).toHaveBeenLastCalledWith('search_skips_heartbeats', true);
    await saved();
    document.body.innerHTML = '';
    expect(show({ search_skips_heartbeats: true }).el<HTMLInputElement>('settings-search-skips-heartbeats')!.checked).toBe(true);
  });
});

describe('webhook routines, in Settings', () => {
  it('are called on loopback only by default, without a warning, and switching calls from other machines on saves an address', () => {
    const { el, change } = show();
    expect(el<HTMLInputElement>('settings-webhook-beyond')!.checked).toBe(false);
    expect(el('settings-webhook-warning')).toBeNull();
    el<HTMLInputElement>('settings-webhook-beyond')!.click();
    expect(change).toHaveBeenLastCalledWith('webhook_bind', '0.0.0.0');
  });

  it('on, show the address and the warning; off again saves no address', () => {
    const { el, change } = show({ webhook_bind: '192.168.1.20' });
    expect(el<HTMLInputElement>('settings-webhook-bind')!.value).toBe('192.168.1.20');
    expect(el('settings-webhook-warning')?.textContent).toContain('Anyone who can reach this address');
    el<HTMLInputElement>('settings-webhook-beyond')!.click();
    expect(change).toHaveBeenLastCalledWith('webhook_bind', undefined);
  });
});

describe('notify me when, in Settings', () => {
  it('has a switch for a monitor firing of its own, apart from a routine’s result', async () => {
    const { el, change } = show();
    const monitors = el<HTMLInputElement>('settings-notify-monitors')!;
    expect(monitors.closest('label')!.textContent).toMatch(/A monitor fires/);
    monitors.click();
    expect(change).toHaveBeenLastCalledWith('notifications', { ...settings.notifications, monitors: false });
    await saved();
    expect(el<HTMLInputElement>('settings-notify-routines')!.checked).toBe(true);
  });
});
