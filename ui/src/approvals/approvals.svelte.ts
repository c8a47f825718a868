// The approval requests of every session for the components: listens to the event stream
// (see state.ts for the rules) and sends the user's answers. One store for the window, so
// a request in a conversation not on screen still marks it in the sidebar and the status bar.

import * as ipc from '../lib/ipc';
import type { ApprovalDecision, EventEnvelope } from '../lib/protocol';
import {
  answerFailed,
  answerLocally,
  applyApprovalEvent,
  approvalOp,
  initialApprovals,
  isPending,
  waitingSessions,
  type ApprovalsState,
} from './state';

export class ApprovalsStore {
  /** Replaced wholesale by the reducer, so `raw` is enough. */
  state = $state.raw<ApprovalsState>(initialApprovals());
  /** Sessions with a request waiting. */
  waiting = $derived(waitingSessions(this.state));
  /** The oldest waiting request anywhere, for the status bar. */
  firstPending = $derived(this.state.approvals.find(isPending) ?? null);

  async start(): Promise<ipc.Unlisten> {
    try {
      return await ipc.onEvent((event) => this.#onEvent(event));
    } catch {
      // The chat store reports a missing backend; nothing to add here.
      return () => {};
    }
  }

  /** Answers request `id`; the card collapses at once and reopens if the core never got it. */
  async answer(id: string, decision: ApprovalDecision): Promise<void> {
    const before = this.state;
    this.state = answerLocally(this.state, id, decision);
    if (this.state === before) return;
    try {
      await ipc.submit(approvalOp(id, decision));
    } catch (e) {
      this.state = answerFailed(this.state, id, `Your answer was not sent: ${ipc.toCommandError(e).message}`);
    }
  }

  #onEvent(event: EventEnvelope): void {
    this.state = applyApprovalEvent(this.state, event);
  }
}
