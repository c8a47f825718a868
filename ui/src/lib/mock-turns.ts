// The `?mock` backend's turns, after vigil-core's lanes and agent loop: one turn at a time
// per session, a message sent during a turn queued and steering it at its next step, a
// scripted reply with tool calls (or, for "run …" and `?mock=approval`, calls that wait for
// the mock gate), and after Stop queued messages saved without an answer. Only `mock.ts`
// imports this.
//
// Owns: the sessions' lanes and the event order of a turn.
// Must never: emit a turn's events out of the order the core uses (the chat's reducer is
// tested against that order).

import type { createMockGate } from './mock-approvals';
import { CONFIG_DIFF, CONFIG_FILE, SAMPLE_REPLY, text, userTurn, type MockSession } from './mock-data';
import type { createMockHeartbeat } from './mock-heartbeat';
import type { ApprovalKind, Event, JsonValue, Message, Usage } from './protocol';

type Emit = (sessionId: string | null, runId: string | null, event: Event) => void;

const INTERRUPT_PREFIX = '[INTERRUPT] New message from user: ';

/** One session's lane, as in `runtime.rs`: one turn at a time, a queue for steering. */
export interface Lane {
  busy: boolean;
  queue: string[];
  cancelled: boolean;
}

export interface TurnDeps {
  variant: string;
  emit: Emit;
  /** The id counter the whole mock shares (event ids, run ids, call ids). */
  counter: { seq: number };
  sessions: Map<string, MockSession>;
  gate: ReturnType<typeof createMockGate>;
  heartbeat: ReturnType<typeof createMockHeartbeat>;
  /** The model the provider settings name now. */
  model: () => string;
  sessionsChanged: () => void;
}

export function createMockTurns({ variant, emit, counter, sessions, gate, heartbeat, model, sessionsChanged }: TurnDeps) {
  const lanes = new Map<string, Lane>();
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const asksApproval = variant.startsWith('approval');

  function lane(id: string): Lane {
    let l = lanes.get(id);
    if (!l) lanes.set(id, (l = { busy: false, queue: [], cancelled: false }));
    return l;
  }

  /** A turn in one session; `say` appends and announces a saved message. */
  function turnIn(sessionId: string, runId: string) {
    const session = sessions.get(sessionId);
    const me = lane(sessionId);
    const total: Usage = { input_tokens: 0, output_tokens: 0 };
    const say = (message: Message) => {
      session?.messages.push(message);
      emit(sessionId, runId, { type: 'message_appended', message });
    };
    const ev = (event: Event) => emit(sessionId, runId, event);
    const count = (usage: Usage) => {
      total.input_tokens += usage.input_tokens;
      total.output_tokens += usage.output_tokens;
      return usage;
    };
    async function stream(body: string, chunkMs = 45): Promise<string> {
      let sent = '';
      for (const chunk of body.match(/[\s\S]{1,14}/g) ?? []) {
        if (me.cancelled) break;
        await sleep(chunkMs);
        sent += chunk;
        ev({ type: 'text_delta', text: chunk });
      }
      return sent;
    }
    /** One round that ends in a tool call: optional text, the call, its result. */
    async function toolRound(id: string, name: string, input: JsonValue, lead: string, output: string, tail: string[]) {
      const said = lead ? await stream(lead) : '';
      const content: Message['content'] = said ? [{ type: 'text', text: said }] : [];
      if (me.cancelled) {
        if (said) say({ ...text('assistant', said, Date.now()), model: model(), stop_reason: 'cancelled' });
        return;
      }
      content.push({ type: 'tool_use', id, name, input });
      const usage = count({ input_tokens: 1200 + counter.seq, output_tokens: 40 });
      say({ role: 'assistant', content, ts: Date.now(), model: model(), usage, stop_reason: 'tool_use' });
      ev({ type: 'tool_call_started', call_id: id, name, input });
      let shown = '';
      for (const line of tail) {
        await sleep(350);
        if (me.cancelled) break;
        shown += `${line}\n`;
        ev({ type: 'tool_call_update', call_id: id, output: shown });
      }
      await sleep(500);
      const [content2, isError] = me.cancelled ? ['Cancelled.', true] : [output, false];
      ev({ type: 'tool_call_finished', call_id: id, name, content: content2, is_error: isError });
      say({ role: 'tool_result', content: [{ type: 'tool_result', tool_use_id: id, content: content2, is_error: isError }], ts: Date.now() });
    }
    /** Queued messages reach the model as `[INTERRUPT] …` (agent `inject_steer`). */
    function steer(): boolean {
      if (me.queue.length === 0) return false;
      const queued = me.queue.splice(0);
      for (const t of queued) say({ ...text('user', INTERRUPT_PREFIX + t, Date.now()), kind: { type: 'interrupt' } });
      ev({ type: 'queue_consumed', count: queued.length });
      return true;
    }
    return { say, ev, stream, toolRound, steer, count, total, me };
  }

  /** A call that needs the gate's yes: its arguments, what is asked, what it prints. */
  interface GatedCall {
    name: string;
    input: JsonValue;
    kind: ApprovalKind;
    subject: string;
    cwd?: string;
    env?: string[];
    lines: string[];
  }

  /**
   * A round whose calls need approval (two commands at once, so the cards stack; or a file
   * outside the workspace when the message names a path), then an answer that says what
   * happened.
   */
  async function approvalTurn(sessionId: string, runId: string, t: ReturnType<typeof turnIn>, userText: string) {
    const path = userText.match(/(?:~|\/home)\/[\w.\/-]+/)?.[0]?.replace(/^~/, '/home/you');
    const cwd = '/home/you/projects/vigil';
    const calls: GatedCall[] = path
      ? [{ name: 'read', input: { path }, kind: 'read_outside', subject: path, lines: ['# Trips 2024', '- Lisbon, 12–14 Oct: trams, tiles, pastéis'] }]
      : [
          {
            name: 'exec',
            input: { command: 'cargo build --release', cwd },
            kind: 'exec',
            subject: 'cargo build --release',
            cwd,
            lines: ['   Compiling vigil-core v0.1.0', '   Compiling vigil v0.1.0', '    Finished `release` profile in 41.2s'],
          },
          {
            // A compound line: `git status` is read-only (allowed), `git clean -n` needs the user.
            name: 'exec',
            input: { command: 'git status --short && git clean -n', cwd },
            kind: 'exec',
            subject: 'git status --short && git clean -n',
            cwd,
            lines: [' M src/config.rs', 'Would remove target/tmp/'],
          },
          ...(/\benv\b/i.test(userText)
            ? [
                {
                  name: 'exec',
                  input: { command: 'cargo test', cwd, env: { RUST_LOG: 'debug' } },
                  kind: 'exec' as const,
                  subject: 'cargo test',
                  cwd,
                  env: ['RUST_LOG=debug'],
                  lines: ['test result: ok. 42 passed'],
                },
              ]
            : []),
        ];
    await sleep(300);
    const lead = await t.stream(path ? 'That file is outside my workspace, so I will ask before reading it.' : 'I will build it and check the working tree.');
    if (t.me.cancelled) return 'cancelled' as const;
    const ids = calls.map(() => `call-${++counter.seq}`);
    const content: Message['content'] = [{ type: 'text', text: lead }];
    calls.forEach((c, i) => content.push({ type: 'tool_use', id: ids[i], name: c.name, input: c.input }));
    const usage = t.count({ input_tokens: 900, output_tokens: 60 });
    t.say({ role: 'assistant', content, ts: Date.now(), model: model(), usage, stop_reason: 'tool_use' });
    for (const [i, c] of calls.entries()) t.ev({ type: 'tool_call_started', call_id: ids[i], name: c.name, input: c.input });
    const results = await Promise.all(
      calls.map(async (c, i) => {
        const verdict = await gate.check({ sessionId, runId, kind: c.kind, subject: c.subject, cwd: c.cwd, env: c.env });
        let output = verdict.allowed ? '' : verdict.reason;
        for (const line of verdict.allowed ? c.lines : []) {
          await sleep(400);
          if (t.me.cancelled) break;
          output += `${line}\n`;
          t.ev({ type: 'tool_call_update', call_id: ids[i], output });
        }
        const isError = !verdict.allowed || t.me.cancelled;
        if (t.me.cancelled) output = 'Cancelled.';
        t.ev({ type: 'tool_call_finished', call_id: ids[i], name: c.name, content: output, is_error: isError });
        return { id: ids[i], output, isError, subject: c.subject };
      }),
    );
    t.say({
      role: 'tool_result',
      content: results.map((r) => ({ type: 'tool_result' as const, tool_use_id: r.id, content: r.output, is_error: r.isError })),
      ts: Date.now(),
    });
    if (t.me.cancelled) return 'cancelled' as const;
    t.steer();
    const refused = results.filter((r) => r.isError).map((r) => `\`${r.subject}\``);
    const answer =
      refused.length === 0
        ? path
          ? 'Last year you went to **Lisbon** on 12–14 October; this year’s plan is a similar length, so the same pace should work.'
          : 'The release build finished, and the only change in the tree is `src/config.rs`.'
        : `Understood — I did not run ${refused.join(' or ')}. Tell me if you want me to try another way.`;
    const sent = await t.stream(answer);
    const stop = t.me.cancelled ? ('cancelled' as const) : ('end_turn' as const);
    const finalUsage = stop === 'cancelled' ? undefined : t.count({ input_tokens: 1300, output_tokens: 50 });
    if (sent) t.say({ ...text('assistant', sent, Date.now()), model: model(), usage: finalUsage, stop_reason: stop });
    return stop;
  }

  async function runTurn(sessionId: string, userText: string): Promise<void> {
    const runId = `run-${++counter.seq}`;
    const t = turnIn(sessionId, runId);
    // A primary turn reads the mailbox at its start and acknowledges it only if it succeeds.
    const mailbox = sessionId === 'main' ? heartbeat.snapshot() : [];
    t.say(userTurn(userText, Date.now()));
    t.ev({ type: 'turn_started', user_text: userText });
    const finish = (stop_reason: 'end_turn' | 'cancelled' | 'policy' | 'error', detail?: string) => {
      if (stop_reason === 'end_turn') heartbeat.acknowledge(mailbox);
      t.ev({ type: 'turn_finished', stop_reason, usage: t.total, ...(detail ? { detail } : {}) });
    };

    if (variant === 'error') {
      await sleep(400);
      t.ev({ type: 'error', kind: 'auth', message: 'The provider rejected the API key (401). Check it in Settings.' });
      return finish('error');
    }
    if (asksApproval || /^run\b/i.test(userText.trim())) return finish(await approvalTurn(sessionId, runId, t, userText));
    if (variant === 'compact') {
      await sleep(300);
      const before = sessions.get(sessionId)?.messages.length ?? 0;
      t.say({
        ...text('user', '[Summary of the earlier conversation]\n\nEverything so far, in a few lines (mock).', Date.now()),
        kind: { type: 'summary', replaces_before: before - 1 },
      });
      t.ev({ type: 'compacted', summarized_messages: before - 1, tokens_before: 182_000, tokens_after: 21_500 });
    }
    for (const piece of ['Let me look', ' at the file first.']) {
      await sleep(150);
      t.ev({ type: 'reasoning_delta', text: piece });
    }
    await t.toolRound('call-' + ++counter.seq, 'read', { path: 'src/config.rs' }, 'I will read the file first.', CONFIG_FILE, [
      '     1  use serde::Deserialize;',
      '     2',
      '     3  #[derive(Deserialize)]',
    ]);
    if (t.me.cancelled) return finish('cancelled');
    t.steer();
    if (variant === 'policy') {
      return finish('policy', 'Stopped after 1 tool round: the turn policy allows no more in this mock.');
    }
    await t.toolRound(
      'call-' + ++counter.seq,
      'edit',
      { path: 'src/config.rs', old_text: 'defualt_model', new_text: 'default_model', replace_all: true },
      '',
      CONFIG_DIFF,
      [],
    );
    if (t.me.cancelled) return finish('cancelled');
    t.steer();
    t.ev({ type: 'retrying', attempt: 1, delay_ms: 2000, reason: 'HTTP 529 overloaded' });
    await sleep(1200);
    let more = true;
    let body = SAMPLE_REPLY;
    while (more) {
      const sent = await t.stream(body);
      const stop = t.me.cancelled ? 'cancelled' : 'end_turn';
      if (sent) {
        const usage = stop === 'cancelled' ? undefined : t.count({ input_tokens: 2100, output_tokens: 180 });
        t.say({ ...text('assistant', sent, Date.now()), model: model(), usage, stop_reason: stop });
      }
      if (stop === 'cancelled') return finish('cancelled');
      // Messages sent meanwhile reach the model even after a final answer.
      more = t.steer();
      body = 'Noted — I have taken your message into account. Anything else?';
    }
    finish('end_turn');
  }

  /** As `runtime.rs` `start_turn` + `after_turn`. */
  async function startTurn(sessionId: string, userText: string): Promise<void> {
    const l = lane(sessionId);
    if (l.busy) {
      l.queue.push(userText);
      emit(sessionId, null, { type: 'message_queued', text: userText });
      return;
    }
    const session = sessions.get(sessionId);
    if (session && session.messages.length === 0 && session.summary.title.startsWith('New conversation')) {
      session.summary = { ...session.summary, title: userText.split('\n', 1)[0].slice(0, 48) };
    }
    l.busy = true;
    let next: string | null = userText;
    while (next !== null) {
      l.cancelled = false;
      await runTurn(sessionId, next);
      if (session) session.summary = { ...session.summary, updated_at: Date.now() };
      sessionsChanged();
      const queued = l.queue.splice(0);
      next = null;
      if (queued.length > 0 && !l.cancelled) next = queued.join('\n\n');
      else if (queued.length > 0) {
        for (const t of queued) {
          const m = text('user', t, Date.now());
          session?.messages.push(m);
          emit(sessionId, null, { type: 'message_appended', message: m });
        }
        emit(sessionId, null, { type: 'queue_consumed', count: queued.length });
      }
    }
    l.busy = false;
  }

  return { lanes, lane, startTurn };
}
