// The `?mock` backend's approval gate, after vigil-core `approval.rs`: the policy decides;
// under `ask` a request is announced and waits for the `approval` op or Stop (which
// denies); "always" remembers the prefix. A line is split into its parts on `&&`, `||`,
// `;` and `|` (the core parses it with tree-sitter-bash; this is only a preview), and it
// passes when every part is covered by a rule or the read-only list and it sets no env.
// Only `mock.ts` imports this.

import type { ApprovalDecision, ApprovalKind, ApprovalPolicy, ApprovalRule, ApprovalsView, CommandPart, Event, ExecRun } from './protocol';

const DAY = 24 * 60 * 60 * 1000;

export interface GateRequest {
  sessionId: string;
  runId: string;
  kind: ApprovalKind;
  subject: string;
  cwd?: string;
  /** `NAME=value`, as the card shows them. */
  env?: string[];
  /** For a command: background or not, and its timeout (default: foreground, 30 min). */
  execRun?: ExecRun;
}

export type Verdict = { allowed: true } | { allowed: false; reason: string };

type Emit = (sessionId: string | null, runId: string | null, event: Event) => void;

/** Programs that run arbitrary code: "always" is never offered for them. */
const NEVER_ALWAYS = /^(sh|bash|zsh|dash|env|sudo|doas|su|xargs|nohup|timeout|nice|stdbuf|python[0-9.]*|node|deno|perl|ruby|php|lua|npx|uvx)$/;
/** A few of the core's read-only commands (`shell::read_only`). */
const READ_ONLY = /^(ls|cat|head|tail|wc|rg|grep|pwd|git (status|log|diff|show))\b/;

/** The simple commands of a line, split on `&&`, `||`, `;` and `|` outside quotes. */
export function partsOf(line: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = null;
      current += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      current += c;
    } else if (c === ';' || c === '\n' || c === '|' || (c === '&' && line[i + 1] === '&')) {
      if ((c === '|' || c === '&') && line[i + 1] === c) i++;
      parts.push(current.trim());
      current = '';
    } else {
      current += c;
    }
  }
  parts.push(current.trim());
  return parts.filter((p) => p !== '');
}

/** As `prefix_of`: the program and its subcommand, or the file's folder; empty when
 *  "always" is not offered (a compound line, a shell or interpreter, input to a process). */
export function prefixOf(kind: ApprovalKind, subject: string): string {
  if (kind === 'process_input') return '';
  if (kind !== 'exec') return subject.includes('/') ? subject.slice(0, subject.lastIndexOf('/')) || '/' : subject;
  if (partsOf(subject).length !== 1) return '';
  const [program = '', sub] = subject.trim().split(/\s+/);
  if (NEVER_ALWAYS.test(program)) return '';
  return sub !== undefined && /^[A-Za-z0-9_-]+$/.test(sub) && !sub.startsWith('-') ? `${program} ${sub}` : program;
}

function ruleCovers(rule: ApprovalRule, kind: ApprovalKind, subject: string): boolean {
  if (rule.kind !== kind) return false;
  if (kind === 'exec') return subject === rule.prefix || subject.startsWith(`${rule.prefix} `);
  return subject === rule.prefix || subject.startsWith(`${rule.prefix.replace(/\/$/, '')}/`);
}

/** The core's `DEFAULT_HIDDEN` (vigil-core `sandbox/mod.rs`), for the mock's view. */
const DEFAULT_HIDDEN = [
  '~/.ssh', '~/.gnupg', '~/.aws', '~/.azure', '~/.config/gcloud', '~/.kube', '~/.docker', '~/.netrc',
  '~/.git-credentials', '~/.config/gh', '~/.password-store', '~/.local/share/keyrings', '~/.pki', '~/.mozilla',
  '~/.thunderbird', '~/.config/google-chrome', '~/.config/chromium', '~/.config/BraveSoftware',
  '~/.config/microsoft-edge', '~/.config/evolution', '~/.local/share/evolution', '~/.npmrc', '~/.pypirc',
  '~/.cargo/credentials.toml', '~/.config/hub',
];

/** Vigil's data folder in the mock; no writable folder may hold it or lie in it. */
const DATA_DIR = '/home/you/.local/share/vigil';

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

  // `?mock=no-sandbox` shows what a machine without bubblewrap (nor slirp4netns) looks like.
  const networks = { network: true, unattended_network: false, network_routines: [] as string[], sockets: [] as string[], hidden: [...DEFAULT_HIDDEN], default_hidden: [...DEFAULT_HIDDEN] };
  let sandbox: ApprovalsView['sandbox'] =
    variant === 'no-sandbox'
      ? {
          available: false,
          problem: 'bubblewrap (bwrap) is not installed; install the `bubblewrap` package',
          network_available: false,
          network_problem: 'Commands get no network, even where it is allowed: slirp4netns is not installed; install the `slirp4netns` package',
          ...networks,
          writable: [],
        }
      : { available: true, network_available: true, ...networks, writable: ['/home/you/.cache/pip'] };
  const view = (): ApprovalsView => ({
    policy,
    policy_from_env: fromEnv,
    rules: [...rules],
    sandbox: { ...sandbox, hidden: [...sandbox.hidden], default_hidden: [...sandbox.default_hidden], writable: [...sandbox.writable] },
  });

  const covered = (kind: ApprovalKind, part: string) =>
    (kind === 'exec' && READ_ONLY.test(part)) || rules.some((r) => ruleCovers(r, kind, part));

  async function check(request: GateRequest): Promise<Verdict> {
    const { kind, subject } = request;
    const env = request.env ?? [];
    const what =
      kind === 'exec' ? `the command \`${subject}\`` : `${kind === 'read_outside' ? 'reading' : 'changing'} ${subject} (outside the workspace)`;
    const parts: CommandPart[] =
      kind === 'exec' ? partsOf(subject).map((text) => ({ text, covered: env.length === 0 && covered(kind, text) })) : [];
    if (policy === 'full-auto' || (policy === 'read-only' && kind === 'read_outside')) return { allowed: true };
    if (policy === 'read-only') return { allowed: false, reason: `Denied: ${what}. The approval policy is read-only.` };
    if (kind === 'exec' ? parts.every((p) => p.covered) : covered(kind, subject)) return { allowed: true };
    if (policy === 'allowlist') return { allowed: false, reason: `Denied: ${what} is not on the allowlist.` };

    const id = `approval-${++seq}`;
    const decision = await new Promise<ApprovalDecision>((decide) => {
      waiting.set(id, { sessionId: request.sessionId, runId: request.runId, decide });
      emit(request.sessionId, request.runId, {
        type: 'approval_requested',
        approval_id: id,
        kind,
        command: subject,
        prefix: env.length > 0 ? '' : prefixOf(kind, subject),
        ...(request.cwd ? { cwd: request.cwd } : {}),
        outside_sandbox: kind === 'exec' && !sandbox.available,
        env,
        parts,
        ...(kind === 'exec' && subject.includes('$(') ? { unprovable: 'it uses a command substitution' } : {}),
        ...(kind === 'exec' ? { exec_run: request.execRun ?? { background: false, timeout_ms: 1_800_000 } } : {}),
      });
    });
    emit(request.sessionId, request.runId, { type: 'approval_resolved', approval_id: id, decision });
    if (decision === 'deny') return { allowed: false, reason: `The user denied ${what}.` };
    const prefix = env.length > 0 ? '' : prefixOf(kind, subject);
    if (decision === 'always' && prefix !== '' && !rules.some((r) => r.kind === kind && r.prefix === prefix)) {
      rules = [...rules, { kind, prefix, created_at: Date.now() }];
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

  function setNetwork(on: boolean): ApprovalsView {
    sandbox = { ...sandbox, network: on };
    return view();
  }

  function setUnattendedNetwork(on: boolean): ApprovalsView {
    sandbox = { ...sandbox, unattended_network: on };
    return view();
  }

  function setSockets(sockets: string[]): ApprovalsView {
    sandbox = { ...sandbox, sockets: [...new Set(sockets.map((s) => s.trim()).filter((s) => s !== ''))] };
    return view();
  }

  function setRoutineNetwork(id: string, on: boolean): ApprovalsView {
    const kept = sandbox.network_routines.filter((r) => r !== id);
    sandbox = { ...sandbox, network_routines: on ? [...kept, id] : kept };
    return view();
  }

  /** As `set_sandbox_hidden`: `~/…` or full paths without `..`, tidied, each once. */
  function setHidden(entries: string[]): ApprovalsView {
    const kept: string[] = [];
    for (const typed of entries.map((e) => e.trim()).filter((e) => e !== '')) {
      const refuse = (why: string) => ({ code: 'invalid_path', field: 'hidden', message: `${typed} ${why}` });
      const root = typed === '~' || typed.startsWith('~/') ? '~' : typed.startsWith('/') ? '' : null;
      if (root === null) throw refuse('is neither in your home (~/…) nor a full path (/…)');
      const parts = typed.slice(root.length).split('/').filter((p) => p !== '' && p !== '.');
      if (parts.includes('..')) throw refuse('contains “..”; write the path without it');
      if (parts.length === 0) throw refuse(`would hide ${root ? 'your whole home folder' : 'the whole file system'}, the workspace with it`);
      const entry = `${root}/${parts.join('/')}`;
      if (!kept.includes(entry)) kept.push(entry);
    }
    sandbox = { ...sandbox, hidden: kept };
    return view();
  }

  /** As `set_sandbox_writable`: full paths only, never at or around the data folder. */
  function setWritable(folders: string[]): ApprovalsView {
    const checked: string[] = [];
    for (const typed of folders.map((f) => f.trim()).filter((f) => f !== '')) {
      const folder = typed.length > 1 ? typed.replace(/\/+$/, '') : typed;
      if (!folder.startsWith('/')) {
        throw { code: 'invalid_folder', field: 'writable', message: `${typed} is not a full path to an existing folder` };
      }
      if (folder === DATA_DIR || folder.startsWith(`${DATA_DIR}/`) || DATA_DIR.startsWith(folder === '/' ? '/' : `${folder}/`)) {
        throw {
          code: 'invalid_folder',
          field: 'writable',
          message: `${typed} holds or lies in Vigil's own data folder, which commands must not reach`,
        };
      }
      if (!checked.includes(folder)) checked.push(folder);
    }
    sandbox = { ...sandbox, writable: checked };
    return view();
  }

  return { view, check, answer, cancelSession, setPolicy, forget, setNetwork, setUnattendedNetwork, setRoutineNetwork, setSockets, setHidden, setWritable };
}
