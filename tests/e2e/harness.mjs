// Starts the real pieces an end-to-end test needs: the fake provider, a D-Bus monitor that
// sees notifications as the desktop does, tauri-driver (WebKitWebDriver underneath), and
// sessions of the real built app. Everything is torn down by `stop()`.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { Builder, By, until } from 'selenium-webdriver';

export const ROOT = path.resolve(import.meta.dirname, '../..');
const TARGET = process.env.CARGO_TARGET_DIR ?? path.join(ROOT, 'target');
export const APP = path.join(TARGET, 'debug', 'vigil');
const FAKE = path.join(TARGET, 'debug', 'vigil-fake-llm');
export const ARTIFACTS = path.join(ROOT, 'tests', 'artifacts');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function waitFor(what, fn, timeoutMs = 20000, everyMs = 100) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

export class Harness {
  constructor() {
    this.children = [];
    this.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-e2e-'));
    this.fakeLog = path.join(this.dataDir, 'fake-requests.jsonl');
    this.dbusLog = path.join(this.dataDir, 'dbus-notifications.log');
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  }

  spawn(cmd, args, opts = {}) {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    this.children.push(child);
    return child;
  }

  /** The fake provider with `script`; resolves to its base URL. */
  async startFakeProvider(script) {
    for (const bin of [APP, FAKE]) {
      if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run \`make app\` and \`cargo build -p vigil-fake-llm\` first`);
    }
    const scriptPath = path.join(this.dataDir, 'script.json');
    fs.writeFileSync(scriptPath, JSON.stringify(script));
    const child = this.spawn(FAKE, ['--script', scriptPath, '--log', this.fakeLog]);
    this.fakeUrl = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        const m = out.match(/listening on (http:\/\/\S+)/);
        if (m) resolve(m[1]);
      });
      child.on('exit', (code) => reject(new Error(`fake provider exited with ${code}`)));
    });
    return this.fakeUrl;
  }

  fakeRequests() {
    if (!fs.existsSync(this.fakeLog)) return [];
    return fs.readFileSync(this.fakeLog, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }

  /** Records every call on the notifications interface, as a desktop would receive it. */
  async startNotificationMonitor() {
    if (!process.env.DBUS_SESSION_BUS_ADDRESS) {
      throw new Error('no D-Bus session bus: run the end-to-end tests under `dbus-run-session` (make test-e2e does)');
    }
    const out = fs.openSync(this.dbusLog, 'w');
    this.spawn('dbus-monitor', ["interface='org.freedesktop.Notifications'"], { stdio: ['ignore', out, 'inherit'] });
    await sleep(300);
  }

  notificationLog() {
    return fs.existsSync(this.dbusLog) ? fs.readFileSync(this.dbusLog, 'utf8') : '';
  }

  /** The environment that points the app at the fake provider with this data dir. */
  providerEnv(kind = 'anthropic', extra = {}) {
    return {
      VIGIL_DATA_DIR: this.dataDir,
      VIGIL_PROVIDER: kind,
      VIGIL_BASE_URL: kind === 'openai' ? `${this.fakeUrl}/v1` : this.fakeUrl,
      VIGIL_MODEL: 'fake-model',
      VIGIL_API_KEY: 'sk-e2e',
      VIGIL_NO_KEYRING: '1',
      ...extra,
    };
  }

  /** tauri-driver, with the environment the app will inherit. */
  async startDriver(env) {
    const port = await freePort();
    const nativePort = await freePort();
    const child = this.spawn('tauri-driver', ['--port', String(port), '--native-port', String(nativePort)], {
      env: { ...process.env, ...env },
    });
    child.stderr.on('data', (d) => process.env.E2E_VERBOSE && process.stderr.write(d));
    this.driverUrl = `http://127.0.0.1:${port}/`;
    await waitFor('tauri-driver', async () => (await fetch(`${this.driverUrl}status`)).ok);
  }

  /** A new app session; resolves once the UI says it is ready. Returns [driver, ms to ready]. */
  async launchApp() {
    const started = Date.now();
    const driver = await new Builder()
      .usingServer(this.driverUrl)
      .withCapabilities({ browserName: 'wry', 'tauri:options': { application: APP } })
      .build();
    await driver.wait(async () => (await driver.executeScript('return document.body.dataset.ready')) === 'true', 30000, 'UI ready');
    return [driver, Date.now() - started];
  }

  /** The fake provider answering `script`, the notification monitor, and the app started
   *  against them (approvals `full-auto`, plus `env`). Returns the app's driver. */
  async launchWithFakeProvider(script, env = {}) {
    await this.startFakeProvider(script);
    await this.startNotificationMonitor();
    await this.startDriver(this.providerEnv('anthropic', { VIGIL_APPROVAL_POLICY: 'full-auto', ...env }));
    const [driver] = await this.launchApp();
    return driver;
  }

  async stop() {
    for (const c of this.children.reverse()) {
      try {
        c.kill('SIGTERM');
      } catch {}
    }
    await sleep(200);
    killApp();
  }
}

/** The rendered messages, read in one script so a re-render cannot interleave. */
/** An app that outlived its WebDriver session (a quit that never answered) must not keep
 *  the test run alive: kills this checkout's binary only. */
export function killApp() {
  try {
    // The binary itself, not vigil-fake-llm beside it (the pattern is a regex).
    execFileSync('pkill', ['-f', '--', `^${APP}( |$)`]);
  } catch {}
}

/** Ends a WebDriver session, giving up after 15 s (the app is then killed by `stop`). */
export async function quit(driver) {
  if (!driver) return;
  await Promise.race([driver.quit().catch(() => {}), sleep(15000)]);
}

export async function messages(driver) {
  return driver.executeScript(`
    return [...document.querySelectorAll('[data-testid="message"]')].map((el) => {
      const body = el.querySelector('[data-testid="message-text"]');
      return {
        role: el.dataset.role,
        streaming: el.dataset.streaming === 'true',
        text: body ? body.innerText.trim() : '',
        html: body ? body.innerHTML : '',
      };
    });`);
}

export async function send(driver, text) {
  const input = await driver.findElement(By.css('[data-testid="chat-input"]'));
  await input.sendKeys(text, '\uE007'); // Enter
}

/** A Rust command called as the window calls it; resolves to `{ ok, value }` or `{ ok: false, error }`. */
export function invoke(driver, command, args = {}) {
  return driver.executeAsyncScript(
    `const done = arguments[arguments.length - 1];
     window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1]).then(
       (value) => done({ ok: true, value }),
       (error) => done({ ok: false, error }),
     );`,
    command,
    args,
  );
}

export async function screenshot(driver, name) {
  // Two frames, so what the DOM holds now has been painted (WebKit can hand back the last frame).
  await driver.executeAsyncScript('const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 50)));');
  // WebKit hands the snapshot over after its next paint, and a page where nothing changes
  // does not paint: a still chat once took 85 s to be captured. A pixel in a corner that
  // flickers between two near-transparent shades keeps the paints coming meanwhile.
  await driver.executeScript(`const dot = document.createElement('div');
    dot.id = 'e2e-paint-tick';
    dot.style.cssText = 'position:fixed;left:0;bottom:0;width:1px;height:1px;pointer-events:none;z-index:2147483647';
    document.body.append(dot);
    let odd = false;
    window.__e2ePaintTick = setInterval(() => { odd = !odd; dot.style.background = odd ? 'rgba(0,0,0,0.01)' : 'rgba(0,0,0,0.02)'; }, 50);`);
  const png = await driver.takeScreenshot();
  await driver.executeScript("clearInterval(window.__e2ePaintTick); document.getElementById('e2e-paint-tick')?.remove();");
  const file = path.join(ARTIFACTS, name);
  fs.writeFileSync(file, png, 'base64');
  return file;
}

/** Every process as `{ pid, ppid, stat, rss, comm }`. */
function processTable() {
  const ps = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,stat=,rss=,comm=']).toString().trim().split('\n');
  return ps.map((l) => l.trim().split(/\s+/)).map(([pid, ppid, stat, rss, ...comm]) => ({ pid, ppid, stat, rss: Number(rss), comm: comm.join(' ') }));
}

/** The pids of `roots` and of every process under them. */
function descendants(rows, roots) {
  const keep = new Set(roots.map(String));
  let grew = true;
  while (grew) {
    grew = false;
    for (const r of rows) if (keep.has(r.ppid) && !keep.has(r.pid)) { keep.add(r.pid); grew = true; }
  }
  return keep;
}

/** This test file's processes named `name`: under this node process (through tauri-driver
 *  and WebKitWebDriver), so another test run on the same machine is never counted. */
function ownProcesses(rows, name) {
  const mine = descendants(rows, [process.pid]);
  return rows.filter((r) => r.comm === name && mine.has(r.pid));
}

/** Resident memory of the app and every process under it (the webview's too), in KiB. */
export function processTreeRssKiB(rootName = 'vigil') {
  const rows = processTable();
  const keep = descendants(rows, ownProcesses(rows, rootName).map((r) => r.pid));
  const members = rows.filter((r) => keep.has(r.pid));
  return { total: members.reduce((s, r) => s + r.rss, 0), members };
}

/** Sets a bound input's value the way typing does (select-all + type is flaky in
 *  WebKitWebDriver) and tells the page, as an `input` event would. */
export function fill(driver, selector, value) {
  return driver.executeScript(
    `const e = document.querySelector(arguments[0]); e.focus(); e.value = arguments[1];
     e.dispatchEvent(new Event('input', { bubbles: true }));`,
    selector,
    value,
  );
}

/** The running Vigil apps' pids: the ones this test file started (another run on the
 *  machine, a developer's or a parallel job's, is not its business: counted, it failed "the
 *  app to exit" and "one Vigil running"). An app that exited but whose parent
 *  (WebKitWebDriver) has not reaped it yet is a zombie, not running: counted, it once made a
 *  test signal the dead process of an earlier session instead of the live one. */
export function appPids() {
  return ownProcesses(processTable(), 'vigil')
    .filter((r) => !r.stat.startsWith('Z'))
    .map((r) => r.pid);
}

/** The pids of the processes whose environment holds `name=value` and whose command line
 *  contains `needle`. A test's data dir is unique, and everything the app starts inherits
 *  it, so this finds that app's children and nobody else's (other checkouts run the same
 *  programs at the same time). */
export function pidsWithEnv(name, value, needle = '') {
  const want = `${name}=${value}`;
  const found = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const env = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      const state = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)?.[0];
      if (env.includes(want) && cmdline.includes(needle) && state !== 'Z') found.push(Number(pid));
    } catch {
      // Gone meanwhile, or someone else's: not ours.
    }
  }
  return found;
}

/** Whether process `pid` exists. */
export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export { By, until, waitFor, sleep };
