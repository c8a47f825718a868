// Settings' webhook address: off by default (loopback only, no warning); turning calls from
// other machines on saves an address and shows what that opens; turning it off saves none.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import WebhookBind from './WebhookBind.svelte';

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

function show(value: string | null, onSave = vi.fn()) {
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(mount(WebhookBind, { target, props: { value, busy: false, onSave } }));
  flushSync();
  const q = <T extends HTMLElement>(id: string) => target.querySelector<T>(`[data-testid="${id}"]`);
  return { q, onSave };
}

describe('the webhook address in Settings', () => {
  it('is loopback only by default, without a warning, and switching it on saves an address', () => {
    const { q, onSave } = show(null);
    expect(q<HTMLInputElement>('settings-webhook-beyond')!.checked).toBe(false);
    expect(q('settings-webhook-warning')).toBeNull();
    q<HTMLInputElement>('settings-webhook-beyond')!.click();
    expect(onSave).toHaveBeenLastCalledWith('0.0.0.0');
  });

  it('on, shows the address and the warning; off again saves no address', () => {
    const { q, onSave } = show('192.168.1.20');
    expect(q<HTMLInputElement>('settings-webhook-bind')!.value).toBe('192.168.1.20');
    expect(q('settings-webhook-warning')?.textContent).toContain('Anyone who can reach this address');
    q<HTMLInputElement>('settings-webhook-beyond')!.click();
    expect(onSave).toHaveBeenLastCalledWith(undefined);
  });
});
