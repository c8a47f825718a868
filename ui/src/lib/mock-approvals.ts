// The `?mock` backend's approval gate, after vigil-core `approval.rs`: the policy decides;
// under `ask` a request is announced and waits for the `approval` op or Stop (which
// denies); "always" remembers the prefix. Only `mock.ts` imports this.

import type { ApprovalDecision, ApprovalKind, ApprovalPolicy, ApprovalRule, ApprovalsView, Event } from './protocol';

const DAY = 24 * 60 * 60 * 1000;

export interface GateRequest {
  sessionId: string;
  runId: string;
  kind: ApprovalKind;
  subject: string;
  cwd?: string;
}

export type Verdict = { allowed: true } | { allowed: false; reason: string };

type Emit = (sessionId: string | null, runId: string | null, event: Event) => void;

/** As `prefix_of`: the program and its subcommand, or the file's folder. */
export function prefixOf(kind: ApprovalKind, subject: string): string {
  if (kind !== 'exec') return subject.includes('/') ? subject.slice(0, subject.lastIndexOf('/')) || '/' : subject;
  const [program = '', sub] = subject.trim().split(/\s+/);
  return sub !== undefined && /^[A-Za-z0-9_-]+$/.test(sub) && !sub.startsWith('-') ? `${program} ${sub}` : program;
}

function matches(rule: ApprovalRule, kind: ApprovalKind, subject: string): boolean {
  if (rule.kind !== kind) return false;
  if (kind === 'exec') return subject === rule.prefix || subject.startsWith(`${rule.prefix} `);
  return subject === rule.prefix || subject.startsWith(`${rule.prefix.replace(/\/$/, '')}/`);
}

export function createMockGate(variant: string, emit: Emit) {
  const fromEnv = variant === 'approval-env';
  let policy: ApprovalPolicy = fromEnv ? 'allowlist' : 'ask';
  const now = Date.now();
  let rules: ApprovalRule[] = [
    { kind: 'exec', prefix: 'cargo test', created_at: now - 3 * DAY },
    { kind: 'read_outside', prefix: '/home/you/notes', created_at: now - 12 * DAY },
  ];
  const waiting = new Map<string, { sessionId: string; runId: string; decide: (d: ApprovalDecision) => void }>();
  let seq = 0;

  // `?mock=no-sandbox` shows what a machine without bubblewrap looks like.
  const sandbox: ApprovalsView['sandbox'] =
    variant === 'no-sandbox'
      ? { available: false, problem: 'bubblewrap (bwrap) is not installed; install the `bubblewrap` package', network: true, writable: [] }
      : { available: true, network: true, writable: [] };
  const view = (): ApprovalsView => ({ policy, policy_from_env: fromEnv, rules: [...rules], sandbox: { ...sandbox } });

  async function check(request: GateRequest): Promise<Verdict> {
    const { kind, subject } = request;
    const what =
      kind === 'exec' ? `the command \`${subject}\`` : `${kind === 'read_outside' ? 'reading' : 'changing'} ${subject} (outside the workspace)`;
    if (policy === 'full-auto' || (policy === 'read-only' && kind === 'read_outside')) return { allowed: true };
    if (policy === 'read-only') return { allowed: false, reason: `Denied: ${what}. The approval policy is read-only.` };
    if (rules.some((r) => matches(r, kind, subject))) return { allowed: true };
    if (policy === 'allowlist') return { allowed: false, reason: `Denied: ${what} is not on the allowlist.` };

    const id = `approval-${++seq}`;
    const decision = await new Promise<ApprovalDecision>((decide) => {
      waiting.set(id, { sessionId: request.sessionId, runId: request.runId, decide });
      emit(request.sessionId, request.runId, {
        type: 'approval_requested',
        id,
        kind,
        command: subject,
        prefix: prefixOf(kind, subject),
        ...(request.cwd ? { cwd: request.cwd } : {}),
        outside_sandbox: false,
        env: [],
        parts: kind === 'exec' ? [{ text: subject, covered: false }] : [],
      });
    });
    emit(request.sessionId, request.runId, { type: 'approval_resolved', id, decision });
    if (decision === 'deny') return { allowed: false, reason: `The user denied ${what}.` };
    if (decision === 'always' && !rules.some((r) => r.kind === kind && r.prefix === prefixOf(kind, subject))) {
      rules = [...rules, { kind, prefix: prefixOf(kind, subject), created_at: Date.now() }];
    }
    return { allowed: true };
  }

  /** The `approval` op; false when nothing waits under `id`. */
  function answer(id: string, decision: ApprovalDecision): boolean {
    const w = waiting.get(id);
    if (!w) return false;
    waiting.delete(id);
    w.decide(decision);
    return true;
  }

  /** Stop: every request of the session's turn is denied. */
  function cancelSession(sessionId: string): void {
    for (const [id, w] of waiting) if (w.sessionId === sessionId) answer(id, 'deny');
  }

  function setPolicy(next: ApprovalPolicy): ApprovalsView {
    if (fromEnv) {
      throw { code: 'invalid_settings', message: 'VIGIL_APPROVAL_POLICY is set in the environment; it decides the policy.' };
    }
    policy = next;
    return view();
  }

  function forget(kind: ApprovalKind, prefix: string): ApprovalsView {
    rules = rules.filter((r) => !(r.kind === kind && r.prefix === prefix));
    return view();
  }

  return { view, check, answer, cancelSession, setPolicy, forget };
}
