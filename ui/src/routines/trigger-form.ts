// The editor's trigger picker, free of Svelte: what wakes the routine (its schedule, a file
// change, a URL, a webhook), an optional check that decides without the model, and what it
// does then — as the form holds them and as the draft sends them (issue 33's one shape).
import type { Action, RoutineDraft, RoutineView } from '../lib/protocol';

export type TriggerKind = 'schedule' | 'file' | 'url' | 'webhook';

export interface TriggerForm {
  kind: TriggerKind;
  /** For `file`: one path or glob per line (or comma-separated). */
  paths: string;
  url: string;
  every: string;
  url_when: 'status' | 'content';
  /** Empty: no check. */
  check_command: string;
  check_when: string;
  action: Action;
}

export const TRIGGER_CHOICES: readonly { value: TriggerKind; label: string }[] = [
  { value: 'schedule', label: 'On a schedule' },
  { value: 'file', label: 'When files change' },
  { value: 'url', label: 'When a web page changes or goes down' },
  { value: 'webhook', label: 'When a webhook is called' },
];

export function triggerFormFrom(r: RoutineView | null): TriggerForm {
  const t = r?.trigger;
  return {
    kind: t && t.kind !== 'output' ? t.kind : 'schedule',
    paths: t?.kind === 'file' ? t.paths.join('\n') : '',
    url: t?.kind === 'url' ? t.url : '',
    every: t?.kind === 'url' ? (t.every ?? '5m') : '5m',
    url_when: t?.kind === 'url' && t.when === 'content' ? 'content' : 'status',
    check_command: r?.check?.command ?? '',
    check_when: r?.check?.when ?? 'nonzero',
    action: r?.action ?? 'agent',
  };
}

function pathList(paths: string): string[] {
  return paths
    .split(/[\n,]/)
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/** Checks that need no round trip: what the chosen trigger cannot do without. */
export function checkTrigger(t: TriggerForm): string | null {
  if (t.kind === 'file' && pathList(t.paths).length === 0) return 'Name the files or folders to watch, like notes/*.md or logs/.';
  if (t.kind === 'url' && !/^https?:\/\/\S+$/.test(t.url.trim())) return 'Give the address to watch, starting with https:// or http://.';
  return null;
}

/** The trigger, check and action to send; a routine leaving a trigger for its schedule
 *  says so (`{"kind": "schedule"}`), one taking a trigger drops its schedule. */
export function triggerDraft(t: TriggerForm, editing: RoutineView | null): RoutineDraft {
  const draft: RoutineDraft = { action: t.action };
  if (t.kind === 'file') draft.trigger = { kind: 'file', paths: pathList(t.paths) };
  else if (t.kind === 'url') draft.trigger = { kind: 'url', url: t.url.trim(), every: t.every.trim() || '5m', when: t.url_when };
  else if (t.kind === 'webhook') draft.trigger = { kind: 'webhook' };
  else if (editing?.trigger) draft.trigger = { kind: 'schedule' };
  if (t.kind !== 'schedule' && editing?.schedule) draft.schedule = '';
  if (t.check_command.trim() !== '') draft.check = { command: t.check_command.trim(), when: t.check_when.trim() || 'nonzero' };
  else if (editing?.check) draft.check = { command: '', when: 'nonzero' };
  return draft;
}
