// An in-browser stand-in for the Rust side, for previewing the UI outside Tauri
// (`?mock`, `?mock=empty`, `?mock=error`). `ipc.ts` imports it lazily and only when
// `__TAURI_INTERNALS__` is absent, so it never runs in the app. It replays the event order
// the core uses (see vigil-core `agent.rs`), so streaming can be watched.

import type { Backend, Unlisten } from './ipc';
import type { Event, EventEnvelope, History, Message, ProviderSettings, SettingsView } from './protocol';

const SESSION = 'main';

const SAMPLE_REPLY = `Here is a small Rust function that reads a file into lines:

\`\`\`rust
use std::fs;
use std::io;

fn read_lines(path: &str) -> io::Result<Vec<String>> {
    Ok(fs::read_to_string(path)?.lines().map(str::to_owned).collect())
}
\`\`\`

A few notes:

- \`read_to_string\` loads the **whole file**; for large files use \`BufReader::lines\`.
- Errors bubble up with \`?\`, so the caller decides what to do.

| Approach | Memory | Speed |
|---|---|---|
| \`read_to_string\` | whole file | fast |
| \`BufReader\` | one line | fast |`;

function now(): number {
  return Date.now();
}

function text(role: Message['role'], body: string, ts: number, extra: Partial<Message> = {}): Message {
  return { role, content: [{ type: 'text', text: body }], ts, ...extra };
}

function sampleHistory(): Message[] {
  const t = now() - 60 * 60 * 1000;
  return [
    text('user', 'How do I read a file line by line in Rust?\nKeep it short.', t),
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'The user wants a short answer. Show read_to_string and mention BufReader.' },
        { type: 'text', text: SAMPLE_REPLY },
      ],
      ts: t + 4000,
      model: 'claude-sonnet-4-5',
      usage: { input_tokens: 42, output_tokens: 180 },
      stop_reason: 'end_turn',
    },
    text('user', 'Thanks! And <script>alert(1)</script> is shown as text, right?', t + 60000),
    text('assistant', 'Yes — your messages are plain text, and my replies are sanitised Markdown.', t + 64000, {
      model: 'claude-sonnet-4-5',
      stop_reason: 'end_turn',
    }),
  ];
}

export function createMockBackend(variant: string): Backend {
  const handlers = new Set<(e: EventEnvelope) => void>();
  let seq = 0;
  let running: { cancelled: boolean } | null = null;
  const messages: Message[] = variant === 'empty' ? [] : sampleHistory();
  let provider: ProviderSettings = {
    kind: 'anthropic',
    base_url: 'https://api.anthropic.com',
    model: 'claude-sonnet-4-5',
    max_tokens: 8192,
  };
  let keySet = variant !== 'empty';

  const view = (): SettingsView => ({
    provider,
    api_key_set: keySet,
    key_storage: keySet ? 'file' : 'none',
    env_overrides: [],
    warnings: keySet
      ? ['No keyring service was found, so the API key is kept in a file readable only by you (mock).']
      : [],
  });

  function emit(runId: string | null, event: Event): void {
    const envelope = {
      id: `mock-${++seq}`,
      ts: now(),
      session_id: SESSION,
      scope: 'primary',
      source: 'agent',
      run_id: runId,
      ...event,
    } as EventEnvelope;
    for (const h of handlers) h(envelope);
  }

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  async function turn(userText: string): Promise<void> {
    const runId = `run-${++seq}`;
    const user = text('user', userText, now());
    messages.push(user);
    emit(runId, { type: 'message_appended', message: user });
    emit(runId, { type: 'turn_started', user_text: userText });
    const me = { cancelled: false };
    running = me;
    if (variant === 'error') {
      await sleep(400);
      emit(runId, { type: 'error', kind: 'auth', message: 'The provider rejected the API key (401). Check it in Settings.' });
      emit(runId, { type: 'turn_finished', stop_reason: 'error', usage: { input_tokens: 0, output_tokens: 0 } });
      running = null;
      return;
    }
    for (const piece of ['Let me think', ' about that…']) {
      await sleep(150);
      emit(runId, { type: 'reasoning_delta', text: piece });
    }
    emit(runId, { type: 'retrying', attempt: 1, delay_ms: 2000, reason: 'HTTP 529 overloaded' });
    await sleep(1200);
    let sent = '';
    for (const chunk of SAMPLE_REPLY.match(/[\s\S]{1,12}/g) ?? []) {
      if (me.cancelled) break;
      await sleep(60);
      sent += chunk;
      emit(runId, { type: 'text_delta', text: chunk });
    }
    const stop = me.cancelled ? 'cancelled' : 'end_turn';
    const reply: Message = text('assistant', sent, now(), { model: provider.model, stop_reason: stop });
    if (sent) {
      messages.push(reply);
      emit(runId, { type: 'message_appended', message: reply });
    }
    emit(runId, { type: 'turn_finished', stop_reason: stop, usage: { input_tokens: 10, output_tokens: 20 } });
    running = null;
  }

  const commands: Record<string, (args: Record<string, unknown>) => unknown> = {
    submit: (args) => {
      const op = args.op as { type: string; text?: string };
      if (op.type === 'user_message') void turn(op.text ?? '');
      if (op.type === 'interrupt' && running) running.cancelled = true;
    },
    history: (): History => ({ session_id: SESSION, messages: [...messages], warnings: [] }),
    get_settings: () => view(),
    save_settings: (args) => {
      const p = args.provider as ProviderSettings;
      if (!/^https?:\/\//.test(p.base_url)) {
        throw { code: 'invalid_settings', message: `Base URL "${p.base_url}" is not a URL.` };
      }
      provider = p;
      if (typeof args.apiKey === 'string') keySet = args.apiKey !== '';
      return view();
    },
    test_connection: (args) =>
      keySet || (typeof args.apiKey === 'string' && args.apiKey !== '')
        ? { ok: true, message: `Connected to ${(args.provider as ProviderSettings).model} (mock).` }
        : { ok: false, message: 'No API key is set.' },
    notify: (args) => {
      console.info('[mock] notification', args);
    },
  };

  return {
    async invoke<T>(command: string, args: Record<string, unknown> = {}): Promise<T> {
      await sleep(command === 'test_connection' ? 700 : 20);
      const run = commands[command];
      if (!run) throw { code: 'unknown', message: `The mock has no command ${command}.` };
      return run(args) as T;
    },
    async listen(handler): Promise<Unlisten> {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
  };
}
