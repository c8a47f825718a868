// `make bench-app`: the desktop app against an empty Tauri v2 window built the same way
// (bench/empty-window: same tauri version and features, release profile as installed,
// assets embedded; BENCH_PROFILE=debug measures debug builds),
// measured in the same run on this machine, under the display and D-Bus `make` gives it.
//
// - Launch to interactive: process start until the page says it is interactive (Vigil: the
//   history and settings are in and events flow; the empty window: its page loaded and a
//   command went to the app and back). Each prints READY with VIGIL_REPORT_READY set. Vigil
//   starts on a data folder holding a 200-message conversation. Median of BENCH_RUNS each,
//   alternating, so drift in the machine's load hits both.
// - Idle PSS of every process of the app (the app, WebKitWebProcess, WebKitNetworkProcess),
//   from /proc/<pid>/smaps_rollup, 5 s after the window is interactive: Vigil with that
//   conversation on screen and 10 finished processes in its Processes panel (run through the
//   panel, so driven by WebDriver), the empty window driven the same way.
//
// Prints each figure, the ratios and the issue's goals; exits 0 either way (a benchmark
// reports, the note says what was met).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Builder, By } from 'selenium-webdriver';
import { Harness, ROOT } from '../tests/e2e/harness.mjs';

const TARGET = process.env.CARGO_TARGET_DIR ?? path.join(ROOT, 'target');
/** The cargo profile both apps were built with (`make bench-app`: release, as installed). */
const PROFILE = process.env.BENCH_PROFILE ?? 'release';
const VIGIL = path.join(TARGET, PROFILE, 'vigil');
const EMPTY = path.join(TARGET, PROFILE, 'vigil-empty-window');
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
/** `launch` or `memory` to measure only that (while working on one). */
const ONLY = process.env.BENCH_ONLY ?? '';
const IDLE_MS = 5000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

for (const bin of [VIGIL, EMPTY]) {
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run \`make bench-app\`, which builds it`);
}

/** A data folder with one conversation of 200 messages (100 questions, 100 Markdown replies). */
function seededDataDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-bench-app-'));
  fs.mkdirSync(path.join(dir, 'sessions'));
  const start = Date.now() - 200 * 60_000;
  const lines = [];
  for (let i = 0; i < 100; i++) {
    lines.push({ role: 'user', content: [{ type: 'text', text: `Question ${i}: how do I check the disk usage of ~/projects?` }], ts: start + i * 120_000 });
    const reply = `Here is how, step ${i}:\n\n1. Run \`du -sh ~/projects/*\`.\n2. Sort it: \`du -sh ~/projects/* | sort -h\`.\n\n\`\`\`sh\ndu -sh ~/projects/* | sort -h | tail -5\n\`\`\`\n\nThe **largest** folders come last.`;
    lines.push({ role: 'assistant', content: [{ type: 'text', text: reply }], ts: start + i * 120_000 + 5000, model: 'fake-model', stop_reason: 'end_turn' });
  }
  fs.writeFileSync(path.join(dir, 'sessions', 'main.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return dir;
}

/** Each launch's own account: ms from process start to ready, and of it the page's part. */
const phases = [];

/** Milliseconds from spawning `bin` to its READY line; the process is then stopped. */
async function launchOnce(bin, env) {
  const t0 = performance.now();
  const child = spawn(bin, [], { env: { ...process.env, ...env, VIGIL_REPORT_READY: '1' }, stdio: ['ignore', 'pipe', 'ignore'] });
  const exited = new Promise((r) => child.once('exit', r));
  const ms = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${path.basename(bin)} was not ready within 30 s`)), 30_000);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/READY (\d+) ms after start, page (\d+) ms/);
      if (m) {
        clearTimeout(timer);
        phases.push({ app: path.basename(bin), total: Number(m[1]), page: Number(m[2]) });
        resolve(performance.now() - t0);
      }
    });
    child.once('exit', (code) => reject(new Error(`${path.basename(bin)} exited (${code}) before it was ready`)));
  });
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
  await exited;
  return ms;
}

/** The PIDs of `root` and everything under it. */
function tree(root) {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,comm=']).toString().trim().split('\n')
    .map((l) => l.trim().split(/\s+/));
  const keep = new Set([String(root)]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of rows) if (keep.has(ppid) && !keep.has(pid)) (keep.add(pid), (grew = true));
  }
  return rows.filter(([pid]) => keep.has(pid)).map(([pid, , comm]) => ({ pid, comm }));
}

/** PSS in KiB of `pid` (0 if it is gone). */
function pss(pid) {
  try {
    const m = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+) kB/m);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Idle PSS of the app started by WebDriver from `bin`, after `prepare(driver)`. */
async function idlePss(h, bin, prepare) {
  const driver = await new Builder()
    .usingServer(h.driverUrl)
    .withCapabilities({ browserName: 'wry', 'tauri:options': { application: bin } })
    .build();
  try {
    await driver.wait(async () => (await driver.executeScript('return document.body.dataset.ready')) === 'true', 30_000);
    await prepare(driver);
    await sleep(IDLE_MS);
    const pid = execFileSync('pgrep', ['-n', '-f', `^${bin}`]).toString().trim();
    const members = tree(pid).map((p) => ({ ...p, pss: pss(p.pid) }));
    return { total: members.reduce((s, p) => s + p.pss, 0), members };
  } finally {
    await driver.quit().catch(() => {});
    await sleep(500);
  }
}

async function conversationShown(driver) {
  // The newest messages are rendered, the rest a scroll away (chat/window.ts).
  await driver.wait(async () => (await driver.findElements(By.css('[data-testid="show-earlier"]'))).length === 1, 20_000, 'the conversation');
}

async function tenFinishedProcesses(driver) {
  await conversationShown(driver);
  await driver.findElement(By.css('[data-testid="processes-toggle"]')).click();
  const input = await driver.wait(async () => (await driver.findElements(By.css('[data-testid="process-command-input"]')))[0], 5000);
  for (let i = 1; i <= 10; i++) {
    await input.sendKeys(`echo finished process ${i}; ls -la /usr/bin | head -40`, '\uE007');
    await driver.wait(async () => (await driver.findElements(By.css('[data-testid="process-item"]'))).length >= i, 5000);
  }
  await driver.wait(
    async () => (await driver.findElements(By.css('[data-testid="process-item"][data-state="exited"]'))).length === 10,
    15_000,
    'ten finished processes',
  );
  await driver.findElement(By.css('[data-testid="processes-close"]')).click();
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mib = (kib) => `${(kib / 1024).toFixed(1)} MiB`;
const row = (name, base, app, unit, fmt = (v) => v.toFixed(0)) =>
  console.log(`${name.padEnd(44)} ${`${fmt(base)} ${unit}`.padStart(12)} ${`${fmt(app)} ${unit}`.padStart(12)} ${(app / base).toFixed(2).padStart(7)}×`);

const dataDir = seededDataDir();
const vigilEnv = { VIGIL_DATA_DIR: dataDir, VIGIL_NO_KEYRING: '1' };
const h = new Harness();
try {
  const ok = (b) => (b ? 'met' : 'NOT met');
  const goals = [];
  console.log(`app vs an empty Tauri v2 window (${PROFILE} builds; ${RUNS} launches each, medians; ${os.cpus().length} cores)`);
  console.log(`${''.padEnd(44)} ${'empty'.padStart(12)} ${'Vigil'.padStart(12)} ${'ratio'.padStart(8)}`);
  if (ONLY !== 'memory') {
    // Warm-up: the first start of each pays for loading libraries from disk.
    await launchOnce(EMPTY, {});
    await launchOnce(VIGIL, vigilEnv);
    const times = { empty: [], vigil: [] };
    for (let i = 0; i < RUNS; i++) {
      times.empty.push(await launchOnce(EMPTY, {}));
      times.vigil.push(await launchOnce(VIGIL, vigilEnv));
    }
    const [te, tv] = [median(times.empty), median(times.vigil)];
    row('launch to interactive (200-message chat)', te, tv, 'ms');
    console.log(`  runs, ms: empty ${times.empty.map((t) => t.toFixed(0)).join(' ')}; Vigil ${times.vigil.map((t) => t.toFixed(0)).join(' ')}`);
    for (const name of ['vigil-empty-window', 'vigil']) {
      const own = phases.filter((p) => p.app === name).slice(1);
      const total = median(own.map((p) => p.total));
      const page = median(own.map((p) => p.page));
      console.log(`  ${name}: ready ${total} ms after its start (median), of which the page ${page} ms and before the page ${total - page} ms`);
    }
    goals.push(`launch ≤ 1.5× the empty window: ${ok(tv <= 1.5 * te)}`, `launch ≤ 500 ms: ${ok(tv <= 500)}`);
  }
  if (ONLY !== 'launch') {
    await h.startDriver(vigilEnv);
    const emptyMem = await idlePss(h, EMPTY, async () => {});
    const chatMem = await idlePss(h, VIGIL, conversationShown);
    const vigilMem = await idlePss(h, VIGIL, tenFinishedProcesses);
    row('idle PSS, all processes (+10 finished procs)', emptyMem.total, vigilMem.total, '', mib);
    row('idle PSS, the chat alone (no processes run)', emptyMem.total, chatMem.total, '', mib);
    for (const [name, m] of [['empty', emptyMem], ['Vigil, chat alone', chatMem], ['Vigil', vigilMem]]) {
      console.log(`  PSS ${name}: ${m.members.map((p) => `${p.comm} ${mib(p.pss)}`).join(', ')}`);
    }
    goals.push(`idle PSS ≤ 1.25×: ${ok(vigilMem.total <= 1.25 * emptyMem.total)}`);
  }
  console.log(`\ngoals: ${goals.join('; ')}`);
} finally {
  await h.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
