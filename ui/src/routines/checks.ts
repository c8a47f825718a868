// What the Routines pane says about HEARTBEAT.md's free-text checks: whether the heartbeat
// has anything to do on its interval runs (seed 002 §6), in words for the user.

import type { HeartbeatChecks } from '../lib/protocol';

export interface ChecksStatus {
  tone: 'ok' | 'idle';
  text: string;
}

/** `held`: HEARTBEAT.md waits for the user's Trust, and nothing of it is in force. */
export function checksStatus(checks: HeartbeatChecks, held = false): ChecksStatus {
  if (held) {
    return {
      tone: 'idle',
      text: 'Until you trust HEARTBEAT.md, heartbeats do not read these checks and none of its routines runs.',
    };
  }
  if (!checks.exists) {
    return {
      tone: 'idle',
      text: 'There is no HEARTBEAT.md: interval heartbeats skip the model call; routines still run. Write checks here to have them looked at every heartbeat.',
    };
  }
  if (checks.effectively_empty) {
    return {
      tone: 'idle',
      text: 'Nothing to check: only headings, empty items and comments. Interval heartbeats skip the model call until you add a check; routines still run.',
    };
  }
  return { tone: 'ok', text: 'Every heartbeat reads these checks and tells you only when one needs you.' };
}
