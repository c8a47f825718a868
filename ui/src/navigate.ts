// Where a click outside the chat leads: a native notification, or a line of the "While you
// were away" card. Each closes the panes that would hide its target, then opens the
// terminal, the routine, or the conversation at the message or approval card it names.

import type { ApprovalsStore } from './approvals/approvals.svelte';
import type { ChatStore } from './chat/chat.svelte';
import type { UpdatesStore } from './heartbeat/updates.svelte';
import type { FocusTarget } from './lib/ipc';
import type { AwayTarget } from './lib/protocol';
import type { ProcessesStore } from './processes/processes.svelte';
import type { RoutinesStore } from './routines/routines.svelte';
import type { SessionsStore } from './sessions/sessions.svelte';
import type { SettingsStore } from './settings/settings.svelte';

/** The window's stores a click can lead through. */
export interface Places {
  settings: SettingsStore;
  routines: RoutinesStore;
  processes: ProcessesStore;
  approvals: ApprovalsStore;
  sessions: SessionsStore;
  chat: ChatStore;
  updates: UpdatesStore;
}

function toConversation(p: Places, sessionId: string): void {
  p.routines.open = false;
  p.settings.open = false;
  p.sessions.select(sessionId);
}

/** A clicked notification: to the card it announced, in whichever conversation it is. */
export function openNotified(p: Places, target: FocusTarget): void {
  // A finished command: its terminal in the Processes panel, over no pane.
  if (target.process_id) {
    p.routines.open = false;
    p.settings.open = false;
    p.processes.reveal(target.process_id);
    return;
  }
  // An approval an unattended run waits for (Open, or a click), or a continuation's answer.
  const approval = target.approval_id ? p.approvals.state.approvals.find((a) => a.id === target.approval_id) : undefined;
  const conversation = approval?.sessionId ?? target.session_id ?? null;
  if (conversation !== null) {
    toConversation(p, conversation);
    if (approval) p.chat.reveal = { approvalId: approval.id };
    else if (target.message_ts != null) p.chat.reveal = { ts: target.message_ts };
    return;
  }
  // The card is in the chat: a pane over it would hide it.
  const sessionId = target.event_id === null ? null : p.updates.revealEvent(target.event_id);
  if (sessionId !== null) toConversation(p, sessionId);
}

/** A line of the "While you were away" card: its conversation (at the message or the
 *  approval), or its routine. */
export function openAway(p: Places, target: AwayTarget): void {
  if (target.type === 'routine') {
    p.settings.open = false;
    p.routines.reveal(target.routine_id);
    return;
  }
  toConversation(p, target.session_id);
  if (target.approval_id != null) p.chat.reveal = { approvalId: target.approval_id };
  else if (target.message_ts != null) p.chat.reveal = { ts: target.message_ts };
}
