// The shell's own events, beside the core's: the quit prompt (tray Quit, or closing the
// window while processes run) and clicks on native notifications. Each is subscribed once,
// early (ipc.ts's `startEarly`), for one handler that comes later; what arrives before it is
// kept and handed over, so a notification clicked while the window starts still leads
// somewhere. Imported through ipc.ts.

import { listen } from '@tauri-apps/api/event';
import type { ProcessSummary } from './protocol';

type Unlisten = () => void;

/** True inside the Tauri webview. */
export function inTauri(): boolean {
  return typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;
}

/** Quitting was asked for (tray Quit, or closing the window) while these processes run. */
export interface QuitRequest {
  processes: ProcessSummary[];
}

/** The event the shell emits to ask the window to confirm quitting. */
export const QUIT_EVENT = 'vigil://quit-requested';

/** Subscribes to quit requests; outside Tauri (the mock) there are none. */
export async function onQuitRequested(handler: (request: QuitRequest) => void): Promise<Unlisten> {
  if (!inTauri()) return () => {};
  return quitChannel.on(handler);
}

/** Where a clicked native notification leads (the shell brings the window forward first). */
export interface FocusTarget {
  /** The background update the notification announced. */
  event_id: string | null;
  /** The process whose exit it announced. */
  process_id: string | null;
  /** The approval request an unattended run waits for: its card (Open, or a click). */
  approval_id?: string | null;
  /** The conversation to open (a continuation's answer, or where it stopped)… */
  session_id?: string | null;
  /** …at this message (its timestamp). */
  message_ts?: number | null;
}

/** The event the shell emits when the user clicks a notification. */
export const FOCUS_EVENT = 'vigil://focus';

/** The shell's events for the quit prompt and notification clicks: subscribed by
 *  [`subscribeShell`], handled once the window has mounted. */
const quitChannel = shellChannel<QuitRequest>(QUIT_EVENT);
const focusChannel = shellChannel<FocusTarget>(FOCUS_EVENT);

/** Subscribes to notification clicks; outside Tauri (the mock) there are none. */
export async function onFocus(handler: (target: FocusTarget) => void): Promise<Unlisten> {
  if (!inTauri()) return () => {};
  return focusChannel.on(handler);
}

/**
 * One of the shell's own events, subscribed once (early, by [`startEarly`]) for one handler
 * that comes later: what arrives before the handler is kept and handed to it, so a
 * notification clicked while the window starts still leads somewhere.
 */
function shellChannel<T>(name: string) {
  let subscription: Promise<Unlisten> | null = null;
  let handler: ((payload: T) => void) | null = null;
  const kept: T[] = [];
  const subscribe = (): Promise<Unlisten> => {
    subscription ??= listen<T>(name, (e) => (handler ? handler(e.payload) : kept.push(e.payload))).catch((e) => {
      subscription = null;
      throw e;
    });
    return subscription;
  };
  return {
    subscribe,
    async on(h: (payload: T) => void): Promise<Unlisten> {
      const unlisten = await subscribe();
      handler = h;
      for (const payload of kept.splice(0)) h(payload);
      return () => {
        handler = null;
        subscription = null;
        unlisten();
      };
    },
  };
}

/** Subscribes to both early (inside Tauri only), so nothing sent while the window starts is lost. */
export function subscribeShell(): void {
  void focusChannel.subscribe().catch(() => {});
  void quitChannel.subscribe().catch(() => {});
}
