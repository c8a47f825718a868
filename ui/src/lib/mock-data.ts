// Sample conversations for the `?mock` backend: what saved transcripts look like (context
// blocks on turn-starting messages, tool calls and their results, a steer, a compaction
// summary, a call cut off by Stop). Only `mock.ts` imports this.

import type { ContentBlock, Message, SessionSummary } from './protocol';

export const SAMPLE_REPLY = `Here is a small Rust function that reads a file into lines:

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

export const CONFIG_FILE = `     1  use serde::Deserialize;
     2
     3  #[derive(Deserialize)]
     4  pub struct Config {
     5      pub defualt_model: String,
     6      pub max_tokens: u32,
     7  }
     8
     9  impl Config {
    10      pub fn model(&self) -> &str {
    11          &self.defualt_model
    12      }
    13  }`;

export const CONFIG_DIFF = `--- a/src/config.rs
+++ b/src/config.rs
@@ -2,12 +2,12 @@
 
 #[derive(Deserialize)]
 pub struct Config {
-    pub defualt_model: String,
+    pub default_model: String,
     pub max_tokens: u32,
 }
 
 impl Config {
     pub fn model(&self) -> &str {
-        &self.defualt_model
+        &self.default_model
     }
 }
Replaced 2 occurrences in src/config.rs (+2 −2).`;

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

export function context(ts: number): ContentBlock {
  return { type: 'context', text: `Current time: ${new Date(ts).toString()}` };
}

/** A message that starts a turn: the core puts the volatile context in front of it. */
export function userTurn(text: string, ts: number): Message {
  return { role: 'user', content: [context(ts), { type: 'text', text }], ts };
}

export function text(role: Message['role'], body: string, ts: number, extra: Partial<Message> = {}): Message {
  return { role, content: [{ type: 'text', text: body }], ts, ...extra };
}

function result(id: string, content: string, ts: number, isError = false): Message {
  return { role: 'tool_result', content: [{ type: 'tool_result', tool_use_id: id, content, is_error: isError }], ts };
}

const MODEL = 'claude-sonnet-4-5';

function mainHistory(now: number): Message[] {
  const t = now - 3 * HOUR;
  const u = now - 40 * 60 * 1000;
  return [
    userTurn('How do I read a file line by line in Rust?\nKeep it short.', t),
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'The user wants a short answer. Show read_to_string and mention BufReader.' },
        { type: 'text', text: SAMPLE_REPLY },
      ],
      ts: t + 4000,
      model: MODEL,
      usage: { input_tokens: 42, output_tokens: 180 },
      stop_reason: 'end_turn',
    },
    userTurn('Thanks! And <script>alert(1)</script> is shown as text, right?', t + 60_000),
    text('assistant', 'Yes — your messages are plain text, and my replies are sanitised Markdown.', t + 64_000, {
      model: MODEL,
      usage: { input_tokens: 260, output_tokens: 21 },
      stop_reason: 'end_turn',
    }),
    text(
      'user',
      '[Summary of the earlier conversation]\n\nThe user asked how to read a file line by line in Rust; Vigil showed `fs::read_to_string(path)?.lines()` and suggested `BufReader::lines` for large files. The user confirmed that their messages are shown as plain text.',
      t + 2 * HOUR,
      { kind: { type: 'summary', replaces_before: 4 } },
    ),
    userTurn('There is a typo in src/config.rs — `defualt_model`. Can you fix it?', u),
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me look at the file first.' },
        { type: 'tool_use', id: 'call-read-1', name: 'read', input: { path: 'src/config.rs' } },
      ],
      ts: u + 3000,
      model: MODEL,
      usage: { input_tokens: 1180, output_tokens: 38 },
      stop_reason: 'tool_use',
    },
    result('call-read-1', CONFIG_FILE, u + 3100),
    {
      role: 'assistant',
      content: [
        {
          type: 'tool_use',
          id: 'call-edit-1',
          name: 'edit',
          input: { path: 'src/config.rs', old_text: 'defualt_model', new_text: 'default_model', replace_all: true },
        },
      ],
      ts: u + 6000,
      model: MODEL,
      usage: { input_tokens: 1450, output_tokens: 64 },
      stop_reason: 'tool_use',
    },
    result('call-edit-1', CONFIG_DIFF, u + 6100),
    text('user', '[INTERRUPT] New message from user: also fix it in the README please', u + 6500, {
      kind: { type: 'interrupt' },
    }),
    {
      role: 'assistant',
      content: [
        {
          type: 'tool_use',
          id: 'call-edit-2',
          name: 'edit',
          input: { path: 'README.md', old_text: 'defualt_model', new_text: 'default_model' },
        },
      ],
      ts: u + 9000,
      model: MODEL,
      usage: { input_tokens: 1720, output_tokens: 52 },
      stop_reason: 'tool_use',
    },
    result('call-edit-2', '`old_text` was not found in README.md. Read the file and try again with text it contains.', u + 9100, true),
    text(
      'assistant',
      'Fixed: `defualt_model` is now `default_model` in **src/config.rs** (the field and its one use).\n\nThe README does not mention the field, so there was nothing to change there.',
      u + 12_000,
      { model: MODEL, usage: { input_tokens: 1890, output_tokens: 61 }, stop_reason: 'end_turn' },
    ),
  ];
}

function tripHistory(now: number): Message[] {
  const t = now - DAY - 2 * HOUR;
  return [
    userTurn('Look through notes/trips.md and suggest a weekend trip for October.', t),
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'I will read your notes first.' },
        { type: 'tool_use', id: 'call-read-9', name: 'read', input: { path: 'notes/trips.md' } },
      ],
      ts: t + 2500,
      model: MODEL,
      usage: { input_tokens: 980, output_tokens: 30 },
      stop_reason: 'cancelled',
    },
  ];
}

function letterHistory(now: number): Message[] {
  const t = now - 9 * DAY;
  return [
    userTurn('Draft a two-line cover letter opening for a backend role.', t),
    text(
      'assistant',
      'I build reliable backend systems in Rust and Go, and I would like to bring that to your team.\nMy last project cut p99 latency by 40% while handling twice the traffic.',
      t + 5000,
      { model: MODEL, usage: { input_tokens: 120, output_tokens: 48 }, stop_reason: 'end_turn' },
    ),
  ];
}

export interface MockSession {
  summary: SessionSummary;
  messages: Message[];
}

export function sampleSessions(now: number, empty: boolean): MockSession[] {
  if (empty) return [{ summary: { id: 'main', title: '', created_at: now, updated_at: now, continuations: 0 }, messages: [] }];
  const main = mainHistory(now);
  return [
    {
      summary: { id: 'main', title: 'Fix the config typo', created_at: now - 3 * HOUR, updated_at: main.at(-1)!.ts, continuations: 0 },
      messages: main,
    },
    {
      summary: { id: 's-trip', title: 'Weekend trip ideas', created_at: now - DAY - 2 * HOUR, updated_at: now - DAY - 2 * HOUR + 2500, continuations: 0 },
      messages: tripHistory(now),
    },
    {
      summary: { id: 's-letter', title: 'Cover letter opening', created_at: now - 9 * DAY, updated_at: now - 9 * DAY + 5000, continuations: 0 },
      messages: letterHistory(now),
    },
  ];
}
