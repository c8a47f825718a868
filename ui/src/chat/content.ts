// What a saved `Message` looks like on screen: its visible text (context blocks hidden,
// the steering prefix and summary heading taken off), its tool calls as cards, and the
// small labels (argument summary, token usage) the views share. Pure, like `state.ts`.

import type { ContentBlock, JsonValue, Message, Usage } from '../lib/protocol';
import type { ImageRef } from './images';

/** How the core sends a message the user typed while a turn ran (vigil-core `interrupt_text`). */
export const INTERRUPT_PREFIX = '[INTERRUPT] New message from user: ';
/** How a compaction summary starts (vigil-core `SUMMARY_HEADING`). */
export const SUMMARY_HEADING = '[Summary of the earlier conversation]';

export type ToolStatus = 'running' | 'done' | 'error' | 'interrupted';

/** One tool call and, once it is back, its result. */
export interface ToolCard {
  id: string;
  name: string;
  input: JsonValue;
  status: ToolStatus;
  /** The result the model saw, or the live tail while the tool runs. */
  output: string;
  /** Images the call returned (a `read` of a PNG, an MCP tool's pictures). */
  images?: ImageRef[];
}

/** The text blocks joined; `context` blocks (the time, background updates) are for the model only. */
export function rawText(content: ContentBlock[]): string {
  return content
    .flatMap((b) => (b.type === 'text' ? [b.text] : []))
    .join('\n\n');
}

export function isSummary(message: Message): boolean {
  if (message.kind?.type === 'summary') return true;
  return message.kind === undefined && message.role === 'user' && rawText(message.content).startsWith(SUMMARY_HEADING);
}

/**
 * A line of what happened while nobody typed (a background command's exit notice, which
 * started a turn on its own, or why Vigil stopped continuing): sent to the model as a user
 * message, shown as a line of its own.
 */
export function isSystemEvent(message: Message): boolean {
  return message.kind?.type === 'system_event';
}

export function isInterrupt(message: Message): boolean {
  if (message.kind?.type === 'interrupt') return true;
  return message.kind === undefined && message.role === 'user' && rawText(message.content).startsWith(INTERRUPT_PREFIX);
}

/**
 * A user message that starts a turn (not a steer, not a summary). A system event starts one
 * when it opens a continuation (it carries the turn's context); a notice taken in by a
 * running turn, or the note that Vigil stopped continuing, does not.
 */
export function startsTurn(message: Message): boolean {
  if (isSystemEvent(message)) return hasContext(message);
  return message.role === 'user' && !isInterrupt(message) && !isSummary(message);
}

/** How the core asks the model after the notices (vigil-core `CONTINUATION_PROMPT`'s opening). */
const CONTINUATION_PROMPT_START = 'A background command you started in this conversation has ended';

/** A system event as the user reads it. */
export interface SystemView {
  /** Each `System: …` notice on its line without the prefix; the question for the model left out. */
  lines: string[];
  /** It started a turn: Vigil carried on by itself. */
  continued: boolean;
}

export function systemView(text: string): SystemView {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const prompt = lines.findIndex((l) => l.startsWith(CONTINUATION_PROMPT_START));
  const kept = prompt < 0 ? lines : lines.slice(0, prompt);
  return { lines: kept.map((l) => (l.startsWith('System: ') ? l.slice('System: '.length) : l)), continued: prompt >= 0 };
}

/** Replies that mean "nothing to tell" (vigil-core `continuation::SILENT_REPLIES`). */
const SILENT_REPLIES = ['NO_REPLY', 'HEARTBEAT_OK'];

function bare(text: string): string {
  return text.trim().replace(/^[*`.]+|[*`.]+$/g, '');
}

/** Whether a reply only says there is nothing to tell (vigil-core `is_silent`). */
export function isSilentReply(text: string): boolean {
  const reply = bare(text);
  return reply === '' || SILENT_REPLIES.some((s) => reply.toUpperCase() === s);
}

/** Whether text still streaming may become such a reply (`NO_REP…`): not shown meanwhile. */
export function maybeSilentReply(text: string): boolean {
  const soFar = text.trim().replace(/^[*`]+/, '').toUpperCase();
  return isSilentReply(text) || SILENT_REPLIES.some((s) => s.startsWith(soFar));
}

/** The text the user sees: what they typed, or the summary without its heading. */
export function displayText(message: Message): string {
  const text = rawText(message.content);
  if (isInterrupt(message) && text.startsWith(INTERRUPT_PREFIX)) return text.slice(INTERRUPT_PREFIX.length);
  if (isSummary(message) && text.startsWith(SUMMARY_HEADING)) return text.slice(SUMMARY_HEADING.length).trim();
  return text;
}

export function thinkingText(content: ContentBlock[]): string {
  return content
    .flatMap((b) => (b.type === 'thinking' ? [b.thinking] : []))
    .join('\n\n');
}

/** Whether the core added volatile context: only messages that start a turn carry it. */
export function hasContext(message: Message): boolean {
  return message.content.some((b) => b.type === 'context');
}

/** Cards for the message's tool calls; `status` is what a call without a result shows. */
export function cardsFrom(content: ContentBlock[], status: ToolStatus): ToolCard[] {
  return content.flatMap((b) =>
    b.type === 'tool_use' ? [{ id: b.id, name: b.name, input: b.input, status, output: '' }] : [],
  );
}

/** Cards rebuilt from a saved message, keeping what live events already told about each call. */
export function mergeCards(fresh: ToolCard[], known: ToolCard[]): ToolCard[] {
  const merged = fresh.map((card) => known.find((k) => k.id === card.id) ?? card);
  const extra = known.filter((k) => !fresh.some((c) => c.id === k.id));
  return [...merged, ...extra];
}

/** A finished call's card. */
export function withResult(card: ToolCard, content: string, isError: boolean): ToolCard {
  return { ...card, status: isError ? 'error' : 'done', output: content };
}

/** Keys whose value best says what a call is about, in order of preference. */
const SUMMARY_KEYS = ['path', 'file_path', 'file', 'command', 'cmd', 'url', 'query', 'pattern', 'name'];
const SUMMARY_MAX = 72;

/** "src/config.rs" for `{path: "src/config.rs", …}`: a one-line hint for the card header. */
export function argumentSummary(input: JsonValue): string {
  let value: JsonValue | undefined = input;
  if (input && typeof input === 'object' && !Array.isArray(input)) {
    const key = SUMMARY_KEYS.find((k) => typeof input[k] === 'string');
    value = key !== undefined ? input[key] : Object.values(input).find((v) => typeof v === 'string');
  }
  if (typeof value !== 'string') return '';
  const line = value.split('\n', 1)[0].trim();
  return line.length > SUMMARY_MAX ? `${line.slice(0, SUMMARY_MAX - 1)}…` : line;
}

export function prettyJson(input: JsonValue): string {
  try {
    return JSON.stringify(input, null, 2) ?? '';
  } catch {
    return String(input);
  }
}

/** Fixed locale so the label (and its tests) do not depend on the machine. */
const COUNT = new Intl.NumberFormat('en-US');

/** "1,234 in · 56 out tokens". */
export function usageText(usage: Usage): string {
  return `${COUNT.format(usage.input_tokens)} in · ${COUNT.format(usage.output_tokens)} out tokens`;
}

export function addUsage(a: Usage | null, b: Usage | undefined): Usage | null {
  if (!b) return a;
  return { input_tokens: (a?.input_tokens ?? 0) + b.input_tokens, output_tokens: (a?.output_tokens ?? 0) + b.output_tokens };
}

export function isEmptyUsage(usage: Usage | null): boolean {
  return !usage || (usage.input_tokens === 0 && usage.output_tokens === 0);
}
