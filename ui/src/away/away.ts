// The "While you were away" card, pure: its sections in order, how the `while_away` event
// replaces the card, and how long the absence was. No Svelte, no IPC: `away.svelte.ts`
// holds the state and `AwayCard.svelte` draws it.

import { durationText } from '../heartbeat/status';
import type { AwayKind, AwayLine, AwaySummary, EventEnvelope } from '../lib/protocol';

export interface Section {
  heading: string;
  lines: AwayLine[];
}

/** The card's sections, in the order the user reads them. */
export const SECTIONS: readonly { heading: string; kinds: readonly AwayKind[] }[] = [
  { heading: 'Ran', kinds: ['ran'] },
  { heading: 'Failed or unknown', kinds: ['failed', 'unknown'] },
  { heading: 'Waiting for you', kinds: ['waiting'] },
  { heading: 'Missed', kinds: ['missed'] },
];

/** The sections that have lines, each in the core's order (the latest first). */
export function sections(summary: AwaySummary): Section[] {
  return SECTIONS.map(({ heading, kinds }) => ({
    heading,
    lines: summary.lines.filter((l) => kinds.includes(l.kind)),
  })).filter((s) => s.lines.length > 0);
}

/**
 * A new absence's card replaces the last one: there is one card, about the latest absence.
 * An approval answered since (here, by a notification's button, or its timeout) leaves the
 * card's "waiting" lines; a card left with no line goes.
 */
export function withAwayEvent(current: AwaySummary | null, event: EventEnvelope): AwaySummary | null {
  if (event.type === 'while_away') return event.summary;
  if (current === null || event.type !== 'approval_resolved') return current;
  const answered = (l: AwayLine) => l.target.type === 'conversation' && l.target.approval_id === event.approval_id;
  if (!current.lines.some(answered)) return current;
  const lines = current.lines.filter((l) => !answered(l));
  return lines.length === 0 ? null : { ...current, lines };
}

/** "3 h 12 min". */
export function awayFor(summary: AwaySummary): string {
  // To the minute: seconds of an absence of hours say nothing.
  const minutes = Math.max(1, Math.round((summary.back_at - summary.away_since) / 60_000));
  return durationText(minutes * 60_000);
}

/** A short word for a line's kind, for screen readers and the test hooks. */
export const KIND_LABEL: Record<AwayKind, string> = {
  ran: 'ran',
  failed: 'failed',
  unknown: 'unknown',
  waiting: 'waiting',
  missed: 'missed',
};
