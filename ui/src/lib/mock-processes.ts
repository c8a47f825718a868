// The `?mock` backend's processes, after vigil-core `runtime/processes.rs`: started,
// output as raw terminal bytes (base64), exited; `list_processes`, `process_output` and the
// panel's ops. `?mock=processes` starts with a build that keeps printing coloured lines and
// a `\r` progress bar, a test run that passed and a lint that failed, plus an `exec` card in
// the main conversation that yielded to the build. Commands started from the panel are
// fakes: `top` draws full-screen, `cat`/`sh`/`python3` answer what is typed, `sleep N`
// waits, `yes` floods, anything with "fail" in it fails, the rest print a little and exit
// 0. Only `mock.ts` imports this.

import type { Event, Message, ProcessSummary } from './protocol';

type Emit = (sessionId: string | null, runId: string | null, event: Event) => void;

/** The build the main conversation's `exec` card yielded to. */
export const MOCK_BUILD_ID = '3f9a1c2e';
const RAW_CAP = 512 * 1024;
const CWD = '/home/you/projects/vigil';

const ESC = '\x1b[';
const c = {
  reset: `${ESC}0m`,
  bold: `${ESC}1m`,
  dim: `${ESC}2m`,
  red: `${ESC}31m`,
  green: `${ESC}32m`,
  yellow: `${ESC}33m`,
  blue: `${ESC}34m`,
  cyan: `${ESC}36m`,
  inverse: `${ESC}7m`,
};

const CRATES = ['serde', 'tokio', 'portable-pty', 'vte', 'tauri', 'reqwest', 'rustls', 'hyper', 'vigil-protocol', 'vigil-core', 'vigil'];

function toBase64(bytes: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

interface Proc {
  summary: ProcessSummary;
  raw: Uint8Array[];
  rawSize: number;
  timers: ReturnType<typeof setInterval>[];
  cols: number;
  rows: number;
  /** What typing does; absent: nothing. */
  onInput?: (data: string) => void;
}

/** The main conversation's turn that started the build (for `?mock=processes`). */
export function execHistory(now: number): Message[] {
  const t = now - 100_000;
  return [
    { role: 'user', content: [{ type: 'text', text: 'Build the release binary, please.' }], ts: t },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Starting the release build.' },
        { type: 'tool_use', id: 'call-exec-1', name: 'exec', input: { command: 'cargo build --release', workdir: CWD } },
      ],
      ts: t + 2000,
      model: 'claude-sonnet-4-5',
      usage: { input_tokens: 2400, output_tokens: 42 },
      stop_reason: 'tool_use',
    },
    {
      role: 'tool_result',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'call-exec-1',
          content: `   Compiling serde v1.0.219\n   Compiling tokio v1.45.0\n\nCommand still running (session ${MOCK_BUILD_ID}, pid 48213). Use process (list/poll/log/write/kill/clear/remove) for follow-up.`,
          is_error: false,
        },
      ],
      ts: t + 12_500,
    },
    {
      role: 'assistant',
      content: [{ type: 'text', text: 'The build is still going, so it carries on in the background. I will tell you when it finishes.' }],
      ts: t + 14_000,
      model: 'claude-sonnet-4-5',
      usage: { input_tokens: 2600, output_tokens: 30 },
      stop_reason: 'end_turn',
    },
  ];
}

export function createMockProcesses(variant: string, emit: Emit) {
  const procs = new Map<string, Proc>();
  const encoder = new TextEncoder();
  let started = false;
  let nextPid = 48_300;

  const newId = () => Math.floor(Math.random() * 0xffffffff).toString(16).padStart(8, '0');

  function write(p: Proc, text: string, announce = true): void {
    const bytes = encoder.encode(text);
    p.raw.push(bytes);
    p.rawSize += bytes.length;
    while (p.rawSize > RAW_CAP && p.raw.length > 1) p.rawSize -= (p.raw.shift() as Uint8Array).length;
    if (announce) emit(null, null, { type: 'process_output', process_id: p.summary.id, data_b64: toBase64(bytes) });
  }

  function finish(p: Proc, state: 'exited' | 'killed' | 'failed', code: number | null, signal: string | null = null): void {
    if (p.summary.state !== 'running') return;
    p.timers.forEach((t) => clearInterval(t));
    p.timers = [];
    p.onInput = undefined;
    p.summary = { ...p.summary, state, exit_code: code, signal, ended_at: Date.now() };
    emit(null, null, { type: 'process_exited', process: p.summary });
  }

  function spawn(owner: string, command: string, extra: Partial<ProcessSummary> = {}, announce = true): Proc {
    const summary: ProcessSummary = {
      id: newId(),
      owner,
      command,
      cwd: CWD,
      pid: nextPid++,
      state: 'running',
      started_at: Date.now(),
      ended_at: null,
      exit_code: null,
      signal: null,
      background: true,
      pty: true,
      ...extra,
    };
    const p: Proc = { summary, raw: [], rawSize: 0, timers: [], cols: 100, rows: 30 };
    procs.set(summary.id, p);
    if (announce) emit(null, null, { type: 'process_started', process: summary });
    return p;
  }

  const every = (p: Proc, ms: number, run: () => void): void => {
    p.timers.push(setInterval(run, ms));
  };
  const after = (p: Proc, ms: number, run: () => void): void => {
    p.timers.push(setTimeout(run, ms));
  };

  /** Typed keys come back as a terminal in cooked mode would show them. */
  const echo = (data: string) => data.replace(/\r/g, '\r\n').replace(/\x7f/g, '\b \b').replace(/\x03/g, '^C\r\n');

  /** A never-ending build: crate lines in colour and a `\r` progress bar every 100 ms. */
  function build(p: Proc, announce: boolean): void {
    let step = 0;
    const total = 412;
    const bar = () => {
      const done = step % (total + 1);
      const crate = CRATES[Math.floor(step / 15) % CRATES.length];
      // As cargo does, the bar fits the terminal so `\r` can redraw it (a wrapped line cannot).
      const width = Math.max(5, Math.min(40, p.cols - 28 - crate.length));
      const filled = Math.round((done / total) * width);
      return `\r${c.bold}${c.cyan}    Building${c.reset} [${'='.repeat(Math.max(0, filled - 1))}>${' '.repeat(width - filled)}] ${done}/${total}: ${crate}${ESC}K`;
    };
    write(p, `${c.bold}${c.green}   Compiling${c.reset} serde v1.0.219\r\n${c.bold}${c.green}   Compiling${c.reset} tokio v1.45.0\r\n`, announce);
    every(p, 100, () => {
      step += 1;
      if (step % 15 === 0) {
        const crate = CRATES[(step / 15) % CRATES.length];
        const warn = step % 90 === 0 ? `${c.bold}${c.yellow}warning${c.reset}${c.bold}: unused variable: \`size\`${c.reset}\r\n  ${c.blue}-->${c.reset} src/exec/pty.rs:88:13\r\n` : '';
        write(p, `\r${ESC}K${warn}${c.bold}${c.green}   Compiling${c.reset} ${crate} v0.${step % 9}.${step % 7}\r\n${bar()}`);
      } else {
        write(p, bar());
      }
    });
    p.onInput = (data) => write(p, echo(data));
  }

  /** A `top`-like full-screen program on the alternate screen; `q` quits. */
  function fullScreen(p: Proc): void {
    let tick = 0;
    const draw = () => {
      tick += 1;
      const lines = [
        `${c.inverse}${` mock top — ${new Date().toLocaleTimeString('en-GB')} — ${p.cols}×${p.rows} — press q to quit`.padEnd(p.cols)}${c.reset}`,
        '',
        `${c.bold}  PID USER      %CPU  %MEM COMMAND${c.reset}`,
      ];
      const names = ['vigil', 'cargo', 'rustc', 'node', 'Xvfb', 'dunst', 'bash', 'python3'];
      for (let i = 0; i < Math.min(names.length, p.rows - 5); i++) {
        const cpu = ((Math.sin(tick / 3 + i) + 1) * 40).toFixed(1).padStart(5);
        const colour = Number(cpu) > 60 ? c.red : Number(cpu) > 30 ? c.yellow : c.green;
        lines.push(`${String(4000 + i * 37).padStart(5)} you      ${colour}${cpu}${c.reset} ${(i * 1.7).toFixed(1).padStart(5)} ${names[i]}`);
      }
      write(p, `${ESC}H${lines.map((l) => `${l}${ESC}K`).join('\r\n')}${ESC}J`);
    };
    write(p, `${ESC}?1049h${ESC}?25l${ESC}2J`);
    draw();
    every(p, 1000, draw);
    p.onInput = (data) => {
      if (data.includes('q') || data.includes('\x03')) {
        write(p, `${ESC}?25h${ESC}?1049l`);
        finish(p, 'exited', 0);
      }
    };
  }

  /** Answers each line typed; Ctrl-C ends it (130), Ctrl-D on an empty line (0). */
  function interactive(p: Proc): void {
    let line = '';
    const prompt = () => write(p, `${c.green}>>>${c.reset} `);
    write(p, `${c.dim}Mock interactive shell — type something and press Enter (Ctrl-D ends).${c.reset}\r\n`);
    prompt();
    p.onInput = (data) => {
      for (const ch of data) {
        if (ch === '\x03') {
          write(p, '^C\r\n');
          return finish(p, 'exited', 130);
        }
        if (ch === '\x04' && line === '') {
          write(p, '\r\n');
          return finish(p, 'exited', 0);
        }
        if (ch === '\r') {
          write(p, `\r\n${line ? `you typed ${c.bold}${JSON.stringify(line)}${c.reset}\r\n` : ''}`);
          line = '';
          prompt();
        } else if (ch === '\x7f') {
          if (line) write(p, '\b \b');
          line = line.slice(0, -1);
        } else if (ch >= ' ') {
          line += ch;
          write(p, ch);
        }
      }
    };
  }

  function runUserCommand(command: string): void {
    const p = spawn('user', command);
    const word = command.trim().split(/\s+/)[0];
    if (['top', 'htop', 'watch'].includes(word)) return fullScreen(p);
    if (['cat', 'sh', 'bash', 'python3', 'python', 'node'].includes(word)) return interactive(p);
    if (word === 'yes') {
      // A flood (~4 MB/s in 60 pieces a second, as the core coalesces): the panel must keep up.
      const line = `${command.trim().split(/\s+/).slice(1).join(' ') || 'y'}\r\n`;
      const piece = line.repeat(Math.ceil(65_536 / line.length));
      return every(p, 16, () => write(p, piece));
    }
    const sleep = /^sleep\s+(\d+(?:\.\d+)?)/.exec(command.trim());
    if (sleep) {
      p.onInput = (data) => write(p, echo(data));
      return after(p, Number(sleep[1]) * 1000, () => finish(p, 'exited', 0));
    }
    if (/fail|^false\b/.test(command)) {
      after(p, 300, () => write(p, `${c.bold}${c.red}error${c.reset}: ${command}: something went wrong (mock)\r\n`));
      return after(p, 700, () => finish(p, 'exited', 1));
    }
    const lines = [`${c.dim}$ ${command}${c.reset}`, 'Working…', `${c.green}✓${c.reset} step one`, `${c.green}✓${c.reset} step two`, `${c.bold}Done.${c.reset}`];
    let i = 0;
    every(p, 300, () => {
      if (i < lines.length) write(p, `${lines[i++]}\r\n`);
      else finish(p, 'exited', 0);
    });
  }

  /** `?mock=processes`: what was running and had run before the window opened. */
  function seed(): void {
    const now = Date.now();
    build(spawn('main', 'cargo build --release', { id: MOCK_BUILD_ID, started_at: now - 95_000, pid: 48213 }, false), false);

    const t = spawn('user', 'cargo test --workspace', { started_at: now - 26 * 60_000, background: false }, false);
    write(t, `${c.bold}${c.green}    Finished${c.reset} \`test\` profile [unoptimized + debuginfo] target(s) in 0.41s\r\n`, false);
    write(t, `${c.bold}${c.green}     Running${c.reset} unittests src/lib.rs (target/debug/deps/vigil_core-9f2c)\r\n\r\nrunning 212 tests\r\n`, false);
    for (const name of ['exec::pty::reads_a_tty', 'exec::registry::caps_output', 'heartbeat::skips_quiet_hours', 'wake::coalesces']) {
      write(t, `test ${name} ... ${c.green}ok${c.reset}\r\n`, false);
    }
    write(t, `\r\ntest result: ${c.green}ok${c.reset}. 212 passed; 0 failed; 4 ignored; finished in 221.3s\r\n`, false);
    t.summary = { ...t.summary, state: 'exited', exit_code: 0, ended_at: now - 22 * 60_000 - 19_000 };

    // Plain pipes (no terminal): bare "\n" line ends, as a program writes them.
    const l = spawn('s-trip', 'npm run lint -- --max-warnings 0', { started_at: now - 2 * 3_600_000, pty: false }, false);
    write(l, `\n> vigil@0.1.0 lint\n> eslint . --max-warnings 0\n\n${c.bold}/home/you/projects/vigil/ui/src/App.svelte${c.reset}\n`, false);
    write(l, `  ${c.dim}41:7${c.reset}  ${c.red}error${c.reset}  'unused' is assigned a value but never used  ${c.dim}no-unused-vars${c.reset}\n\n`, false);
    write(l, `${c.red}${c.bold}✖ 1 problem (1 error, 0 warnings)${c.reset}\n`, false);
    l.summary = { ...l.summary, state: 'exited', exit_code: 1, ended_at: now - 2 * 3_600_000 + 8_400 };
  }

  function find(id: string): Proc {
    const p = procs.get(id);
    if (!p) throw { code: 'process', message: `No process ${id}.` };
    return p;
  }

  function invalid(message: string): void {
    emit(null, null, { type: 'error', kind: 'invalid_op', message });
  }

  return {
    /** The first listener is there. */
    start(): void {
      if (started) return;
      started = true;
      if (variant === 'processes') seed();
    },
    list: (): ProcessSummary[] => [...procs.values()].map((p) => p.summary),
    output: (id: string): string => {
      const p = find(id);
      const all = new Uint8Array(p.rawSize);
      let at = 0;
      for (const chunk of p.raw) {
        all.set(chunk, at);
        at += chunk.length;
      }
      return toBase64(all);
    },
    start_process: (command: string) => {
      if (!command.trim()) return invalid('A command cannot be empty.');
      setTimeout(() => runUserCommand(command), 60);
    },
    input: (id: string, data: string) => {
      const p = procs.get(id);
      if (!p || p.summary.state !== 'running') return invalid(`Process ${id} is not running.`);
      p.onInput?.(data);
    },
    kill: (id: string) => {
      const p = procs.get(id);
      if (!p || p.summary.state !== 'running') return invalid(`Process ${id} is not running.`);
      setTimeout(() => finish(p, 'killed', null, 'SIGTERM'), 80);
    },
    resize: (id: string, cols: number, rows: number) => {
      const p = procs.get(id);
      if (!p) return invalid(`No process ${id}.`);
      p.cols = cols;
      p.rows = rows;
    },
  };
}
