// Builders shared by the reducer tests (imported by `*.test.ts` only, never by the app).

import type { ContentBlock, Event, EventEnvelope, Message, SavedMessage } from '../lib/protocol';
import { applyEvent, initialState, withHistory, type ChatState } from './state';

let seq = 0;

export function ev(event: Event, runId: string | null = 'r1', sessionId: string | null = 'main'): EventEnvelope {
  seq += 1;
  return { id: `e${seq}`, ts: 1000 + seq, session_id: sessionId, scope: 'primary', source: 'agent', run_id: runId, ...event } as EventEnvelope;
}

export function msg(role: Message['role'], text: string, ts: number, extra: Partial<Message> = {}): Message {
  return { role, content: [{ type: 'text', text }], ts, ...extra };
}

/** A turn-starting user message as the core saves it: volatile context first. */
export function userTurn(text: string, ts: number): Message {
  const context: ContentBlock = { type: 'context', text: 'Current time: Saturday 2026-11-21 10:00 (UTC+01:00)' };
  return { role: 'user', content: [context, { type: 'text', text }], ts };
}

export function fold(state: ChatState, events: EventEnvelope[]): ChatState {
  return events.reduce(applyEvent, state);
}

/** A loaded transcript; message `i` has the id `m<i>`. */
export function loaded(messages: Message[] = [], running = false): ChatState {
  return withHistory(initialState(), { session_id: 'main', messages: saved(messages), warnings: [] }, running);
}

/** Messages as a history carries them, with the ids `m0`, `m1`, … */
export function saved(messages: Message[]): SavedMessage[] {
  return messages.map((m, i) => ({ id: `m${i}`, ...m }));
}
