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
//   from /proc/<pid>/smaps_rollup, 5 s after the window is interactive, median of
//   BENCH_MEMORY_RUNS (3) launches each, alternating: Vigil with that
//   conversation on screen and 10 finished processes in its Processes panel (run through the
//   panel, so driven by WebDriver), the empty window driven the same way.
// - Idle CPU, without WebDriver (its session would wake the page): each app started as for
//   the launch, Vigil on a short conversation; after IDLE_SETTLE_S, the CPU time of the app
//   and all its WebKit processes over IDLE_MEASURE_S (each thread's time on the CPU in
//   nanoseconds, /proc/<pid>/task/<tid>/schedstat; a thread that ended meanwhile by the
//   clock ticks its process's /proc/<pid>/stat kept of it: an idle minute is a few ticks,
//   too coarse to compare two apps by), and their voluntary context switches (every thread's
//   /proc/<pid>/task/*/status), with the window open, then again closed: WM_DELETE_WINDOW
//   to the window (tests/e2e/wm-close.py), which hides Vigil to the tray (its default) and
//   hides the empty window too (bench/empty-window does what Vigil's close to tray does).
//
// Idle CPU is the median of BENCH_IDLE_RUNS (3) launches of each app, alternating.
//
// Prints each figure, the ratios and the issue's goals; exits 0 either way (a benchmark
// reports, the note says what was met).
import { spawn, spawnSync, execFileSync } from 'node:child_process';
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
/** `launch`, `memory` or `idle` (or several, comma-separated) to measure only those. */
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').filter(Boolean);
const measures = (what) => ONLY.length === 0 || ONLY.includes(what);
const IDLE_MS = 5000;
/** Launches per memory figure (the median is kept). */
const MEMORY_RUNS = Number(process.env.BENCH_MEMORY_RUNS ?? 3);
/** Idle CPU: the wait after the window is interactive (or closed), then the measured span. */
const IDLE_SETTLE_S = Number(process.env.BENCH_IDLE_SETTLE_S ?? 20);
const IDLE_MEASURE_S = Number(process.env.BENCH_IDLE_MEASURE_S ?? 60);
/** Idle CPU: launches of each app, alternating (the median is kept: an idle minute of two
 * WebKit pages differs by more between launches than between the apps). */
const IDLE_RUNS = Number(process.env.BENCH_IDLE_RUNS ?? 3);
const CLOCK_TICK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
const WM_CLOSE = path.join(ROOT, 'tests', 'e2e', 'wm-close.py');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

for (const bin of [VIGIL, EMPTY]) {
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run \`make bench-app\`, which builds it`);
}

/** A data folder with one conversation of `2 × pairs` messages (questions, Markdown replies). */
function seededDataDir(pairs = 100) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-bench-app-'));
  fs.mkdirSync(path.join(dir, 'sessions'));
  const start = Date.now() - 2 * pairs * 60_000;
  const lines = [];
  for (let i = 0; i < pairs; i++) {
    lines.push({ role: 'user', content: [{ type: 'text', text: `Question ${i}: how do I check the disk usage of ~/projects?` }], ts: start + i * 120_000 });
    const reply = `Here is how, step ${i}:\n\n1. Run \`du -sh ~/projects/*\`.\n2. Sort it: \`du -sh ~/projects/* | sort -h\`.\n\n\`\`\`sh\ndu -sh ~/projects/* | sort -h | tail -5\n\`\`\`\n\nThe **largest** folders come last.`;
    lines.push({ role: 'assistant', content: [{ type: 'text', text: reply }], ts: start + i * 120_000 + 5000, model: 'fake-model', stop_reason: 'end_turn' });
  }
  fs.writeFileSync(path.join(dir, 'sessions', 'main.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return dir;
}

/** Each launch's own account: ms from process start to ready, and of it the page's part. */
const phases = [];

/** Starts `bin` and waits for its READY line: the child, when it exited, and the ms to ready. */
async function startReady(bin, env) {
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
  return { child, exited, ms };
}

/** Stops a process `startReady` started (SIGTERM, then SIGKILL after 10 s). */
async function stop({ child, exited }) {
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
  await exited;
}

/** Milliseconds from spawning `bin` to its READY line; the process is then stopped. */
async function launchOnce(bin, env) {
  const started = await startReady(bin, env);
  await stop(started);
  return started.ms;
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

/**
 * PSS and USS (private pages only) in KiB of `pid` (0 if it is gone). PSS splits each page
 * shared with other processes among them, so it drops while any other WebKit process on
 * the machine maps the same libraries; USS does not depend on what else runs.
 */
function memoryOf(pid) {
  try {
    const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kib = (field) => Number(rollup.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1] ?? 0);
    return { pss: kib('Pss'), uss: kib('Private_Clean') + kib('Private_Dirty') };
  } catch {
    return { pss: 0, uss: 0 };
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
    const members = tree(pid).map((p) => ({ ...p, ...memoryOf(p.pid) }));
    return { total: members.reduce((s, p) => s + p.pss, 0), uss: members.reduce((s, p) => s + p.uss, 0), members };
  } finally {
    await driver.quit().catch(() => {});
    await sleep(500);
  }
}

/** utime + stime, in clock ticks, from a /proc `stat` file (a process's or a thread's). */
function ticksIn(statPath) {
  const stat = fs.readFileSync(statPath, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * The CPU time of `root` and everything under it: each process's clock ticks (its ended
 * threads included), and each live thread's ticks, nanoseconds on the CPU and voluntary
 * context switches (a thread's own count).
 */
function cpuSnapshot(root) {
  const procs = tree(root).map(({ pid, comm }) => {
    let ticks = 0;
    const threads = new Map();
    try {
      ticks = ticksIn(`/proc/${pid}/stat`);
      for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
        const task = `/proc/${pid}/task/${tid}`;
        const status = fs.readFileSync(`${task}/status`, 'utf8');
        const switches = Number(status.match(/^voluntary_ctxt_switches:\s+(\d+)/m)?.[1] ?? 0);
        const ns = Number(fs.readFileSync(`${task}/schedstat`, 'utf8').split(' ')[0]);
        threads.set(tid, {
          name: `${comm}/${status.match(/^Name:\s+(.*)$/m)?.[1] ?? tid}`,
          switches,
          ns,
          ticks: ticksIn(`${task}/stat`),
        });
      }
    } catch {
      // Gone meanwhile: it counts for nothing.
    }
    return { pid, comm, ticks, threads };
  });
  return new Map(procs.map((p) => [p.pid, p]));
}

/**
 * Seconds on the CPU between two snapshots of one process: its live threads' nanoseconds,
 * plus what threads that ended meanwhile used, as the clock ticks its total kept of them.
 */
function cpuSeconds(before, after) {
  let ns = 0;
  let liveTicks = 0;
  for (const [tid, t] of after.threads) {
    const was = before?.threads.get(tid);
    ns += t.ns - (was?.ns ?? 0);
    liveTicks += t.ticks - (was?.ticks ?? 0);
  }
  const ended = Math.max(0, after.ticks - (before?.ticks ?? 0) - liveTicks);
  return ns / 1e9 + ended / CLOCK_TICK;
}

/**
 * What `root`'s tree used between two snapshots, per minute: CPU seconds, and the context
 * switches of the threads alive at the end (a thread that ended meanwhile is not counted).
 */
function usedPerMinute(root, before, after, seconds) {
  const perMin = 60 / seconds;
  const threads = [...after.values()].flatMap((p) =>
    [...p.threads].map(([tid, t]) => ({
      pid: p.pid,
      tid,
      name: t.name,
      switches: (t.switches - (before.get(p.pid)?.threads.get(tid)?.switches ?? 0)) * perMin,
    })),
  );
  const members = [...after.values()].map((p) => ({
    comm: p.comm,
    cpu: cpuSeconds(before.get(p.pid), p) * perMin,
  }));
  return {
    cpu: members.reduce((s, m) => s + m.cpu, 0),
    switches: threads.reduce((s, t) => s + t.switches, 0),
    appMain: threads.find((t) => t.tid === String(root))?.switches ?? 0,
    members,
    // The threads that woke most, to say what keeps waking.
    wakers: threads.sort((a, b) => b.switches - a.switches).slice(0, 4),
  };
}

async function measureIdle(root) {
  await sleep(IDLE_SETTLE_S * 1000);
  const before = cpuSnapshot(root);
  await sleep(IDLE_MEASURE_S * 1000);
  return usedPerMinute(root, before, cpuSnapshot(root), IDLE_MEASURE_S);
}

const visibleWindows = (title) =>
  spawnSync('xdotool', ['search', '--onlyvisible', '--name', `^${title}$`]).stdout.toString().trim().split('\n').filter(Boolean);

/** Idle CPU of `bin` with its window (named `title`) open, then closed by its close button. */
async function idleCpu(bin, env, title) {
  const started = await startReady(bin, env);
  try {
    const open = await measureIdle(started.child.pid);
    execFileSync('python3', [WM_CLOSE, title]);
    const end = Date.now() + 5000;
    while (visibleWindows(title).length > 0) {
      if (Date.now() > end) throw new Error(`${title}'s window did not hide on close`);
      await sleep(100);
    }
    const closed = await measureIdle(started.child.pid);
    return { open, closed };
  } finally {
    await stop(started);
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
  console.log(`${name.padEnd(44)} ${`${fmt(base)} ${unit}`.padStart(12)} ${`${fmt(app)} ${unit}`.padStart(12)} ${(base > 0 ? (app / base).toFixed(2) : '—').padStart(7)}×`);

const dataDir = seededDataDir();
const vigilEnv = { VIGIL_DATA_DIR: dataDir, VIGIL_NO_KEYRING: '1' };
const h = new Harness();
try {
  const ok = (b) => (b ? 'met' : 'NOT met');
  const goals = [];
  console.log(`app vs an empty Tauri v2 window (${PROFILE} builds; ${RUNS} launches each, medians; ${os.cpus().length} cores)`);
  console.log(`${''.padEnd(44)} ${'empty'.padStart(12)} ${'Vigil'.padStart(12)} ${'ratio'.padStart(8)}`);
  if (measures('launch')) {
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
  if (measures('memory')) {
    await h.startDriver(vigilEnv);
    // The empty window's web process alone moves by up to 35 MiB from one launch to the next
    // (200 to 255 MiB in all): each figure is the median of MEMORY_RUNS launches, alternating.
    const runs = { empty: [], chat: [], vigil: [] };
    for (let i = 0; i < MEMORY_RUNS; i++) {
      runs.empty.push(await idlePss(h, EMPTY, async () => {}));
      runs.chat.push(await idlePss(h, VIGIL, conversationShown));
      runs.vigil.push(await idlePss(h, VIGIL, tenFinishedProcesses));
    }
    const medianRun = (list) => [...list].sort((a, b) => a.total - b.total)[Math.floor(list.length / 2)];
    const [emptyMem, chatMem, vigilMem] = [medianRun(runs.empty), medianRun(runs.chat), medianRun(runs.vigil)];
    row('idle PSS, all processes (+10 finished procs)', emptyMem.total, vigilMem.total, '', mib);
    row('idle PSS, the chat alone (no processes run)', emptyMem.total, chatMem.total, '', mib);
    row('  USS (private), +10 finished procs', emptyMem.uss, vigilMem.uss, '', mib);
    row('  USS (private), the chat alone', emptyMem.uss, chatMem.uss, '', mib);
    console.log(
      `  PSS of each launch: ${Object.entries(runs).map(([k, l]) => `${k} ${l.map((m) => mib(m.total)).join(' ')}`).join('; ')}`,
    );
    for (const [name, m] of [['empty', emptyMem], ['Vigil, chat alone', chatMem], ['Vigil', vigilMem]]) {
      console.log(`  PSS (USS) ${name}: ${m.members.map((p) => `${p.comm} ${mib(p.pss)} (${mib(p.uss)})`).join(', ')}`);
    }
    goals.push(`idle PSS ≤ 1.25×: ${ok(vigilMem.total <= 1.25 * emptyMem.total)}`);
  }
  if (measures('idle')) {
    const shortChat = seededDataDir(3);
    try {
      const idleRuns = { empty: [], Vigil: [] };
      for (let i = 0; i < IDLE_RUNS; i++) {
        idleRuns.empty.push(await idleCpu(EMPTY, {}, 'Empty'));
        idleRuns.Vigil.push(await idleCpu(VIGIL, { ...vigilEnv, VIGIL_DATA_DIR: shortChat }, 'Vigil'));
      }
      // Per state, the launch with the median CPU time (its details are the ones shown).
      const medianRun = (runs, state) => {
        const sorted = [...runs].sort((a, b) => a[state].cpu - b[state].cpu);
        return sorted[Math.floor(sorted.length / 2)][state];
      };
      const pick = (runs) => ({ open: medianRun(runs, 'open'), closed: medianRun(runs, 'closed') });
      const empty = pick(idleRuns.empty);
      const vigil = pick(idleRuns.Vigil);
      const secs = (v) => `${v.toFixed(3)} s`;
      row('idle CPU/min, window open (6-message chat)', empty.open.cpu, vigil.open.cpu, '', secs);
      row('idle CPU/min, window closed (to the tray)', empty.closed.cpu, vigil.closed.cpu, '', secs);
      console.log(
        `  idle: ${IDLE_MEASURE_S} s measured after ${IDLE_SETTLE_S} s, median of ${IDLE_RUNS} launches each; CPU of the app and its WebKit processes`,
      );
      for (const state of ['open', 'closed']) {
        const each = (runs) => runs.map((r) => secs(r[state].cpu)).join(' ');
        console.log(`  CPU/min of each launch, ${state}: empty ${each(idleRuns.empty)}; Vigil ${each(idleRuns.Vigil)}`);
      }
      for (const m of ['open', 'closed']) {
        const line = (who, u) => `${who} ${u.switches.toFixed(0)} (app's main thread ${u.appMain.toFixed(0)})`;
        console.log(`  voluntary context switches/min, ${m}: ${line('empty', empty[m])}; ${line('Vigil', vigil[m])}`);
        for (const [who, u] of [['empty', empty[m]], ['Vigil', vigil[m]]]) {
          console.log(`  CPU/min ${who}, ${m}: ${u.members.map((p) => `${p.comm} ${secs(p.cpu)}`).join(', ')}`);
          console.log(`    woke most (switches/min): ${u.wakers.map((t) => `${t.name} ${t.switches.toFixed(0)}`).join(', ')}`);
        }
      }
      goals.push(
        `idle CPU window open ≤ 2× the empty window: ${ok(vigil.open.cpu <= 2 * empty.open.cpu)}`,
        `idle CPU closed to the tray ≤ 1× the empty window closed: ${ok(vigil.closed.cpu <= empty.closed.cpu)}`,
      );
    } finally {
      fs.rmSync(shortChat, { recursive: true, force: true });
    }
  }
  console.log(`\ngoals: ${goals.join('; ')}`);
} finally {
  await h.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
