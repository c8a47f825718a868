// The shape of a backend: what `ipc.ts`'s wrappers call. Tauri's and the in-browser mock
// (`mock.ts`) both implement it; neither imports the other for it.

import type { EventEnvelope } from './protocol';

export type Unlisten = () => void;

/** What the wrappers in `ipc.ts` need from a backend; the mock implements the same shape. */
export interface Backend {
  invoke<T>(command: string, args?: Record<string, unknown>): Promise<T>;
  /** `from`: of the events held while the window starts, replay those from this index on. */
  listen(handler: (event: EventEnvelope) => void, from?: number): Promise<Unlisten>;
}
