// The security pass in the real window: hostile HTML in an assistant reply renders inert,
// an inline script injected at run time is refused by the CSP, the app and its WebKit
// processes listen on no socket, and an API key the user typed into Settings is nowhere in
// the data folder, the app's home (WebKit's storage and caches) or the logs but its key store.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Harness, appPids, quit, messages, send, processTreeRssKiB, waitFor, sleep, By } from './harness.mjs';

const KEY = 'sk-e2e-secret-7f3a91';
const PAYLOAD = [
  'Here you go:',
  '<img src="x" onerror="window.__pwned = \'img\'">',
  '<script>window.__pwned = "script"</script>',
  '[click me](javascript:window.__pwned=1)',
  '<a href="javascript:window.__pwned=2" id="rawlink">raw link</a>',
  '<svg><script>window.__pwned="svg"</script><a href="javascript:window.__pwned=3"><text>svg link</text></a></svg>',
  '<iframe src="javascript:parent.__pwned=4"></iframe>',
  '<div onclick="window.__pwned=5" id="clicky">click this</div>',
  '<form action="javascript:window.__pwned=6"><button>go</button></form>',
  'The end.',
].join('\n\n');

const h = new Harness();
// The app's own folders hold nothing of the test's (the fake provider's script and request
// log, which carry the key, stay beside them): the data folder, and a home of its own, where
// WebKit keeps its local storage and caches.
const DATA = path.join(h.dataDir, 'app-data');
const HOME = path.join(h.dataDir, 'app-home');
/** The one place the key may be: the key store's file (no keyring in this session). */
const STORE = path.join(DATA, 'secrets', 'anthropic-api-key.key');
let driver;
/** Everything the app printed (its log lines on stderr, through tauri-driver). */
let printed = '';

before(async () => {
  await h.startFakeProvider({ api_key: KEY, steps: [{ kind: 'text', text: PAYLOAD }] });
  fs.mkdirSync(DATA);
  fs.mkdirSync(HOME);
  // Only the folders come from the environment: the provider and its key are set in the window.
  const env = {
    VIGIL_DATA_DIR: DATA,
    VIGIL_NO_KEYRING: '1',
    HOME,
    XDG_DATA_HOME: path.join(HOME, '.local', 'share'),
    XDG_CONFIG_HOME: path.join(HOME, '.config'),
    XDG_CACHE_HOME: path.join(HOME, '.cache'),
    XDG_STATE_HOME: path.join(HOME, '.local', 'state'),
  };
  for (const k of ['VIGIL_PROVIDER', 'VIGIL_BASE_URL', 'VIGIL_MODEL', 'VIGIL_API_KEY', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY']) env[k] = '';
  await h.startDriver(env);
  const driverProcess = h.children.at(-1);
  for (const stream of [driverProcess.stdout, driverProcess.stderr]) stream.on('data', (d) => (printed += d));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const byId = (id) => driver.findElement(By.css(`[data-testid="${id}"]`));

test('the user types an API key into Settings and saves it', async () => {
  await byId('open-settings').click();
  await driver.findElement(By.css('[data-testid="settings-kind"] option[value="anthropic"]')).click();
  for (const [id, value] of [['settings-base-url', h.fakeUrl], ['settings-model', 'fake-model'], ['settings-api-key', KEY]]) {
    const el = await byId(id);
    await el.clear();
    await el.sendKeys(value);
  }
  await byId('settings-save').click();
  await waitFor('the panel to close', async () => (await driver.findElements(By.css('[data-testid="settings-panel"]'))).length === 0);
  // Stored, in the file the key store keeps when there is no keyring.
  assert.equal(fs.readFileSync(STORE, 'utf8'), KEY);
});

test('hostile HTML in a reply renders inert', async () => {
  await send(driver, 'show me something');
  await waitFor('the reply', async () => {
    const last = (await messages(driver)).at(-1);
    return last && last.role === 'assistant' && !last.streaming && last.text.includes('The end.');
  });
  // Clicking what looks clickable does nothing either.
  for (const text of ['click me', 'raw link', 'click this']) {
    const els = await driver.findElements(By.xpath(`//*[@data-testid="message-text"]//*[contains(text(), "${text}")]`));
    if (els.length) await els[0].click().catch(() => {});
  }
  await sleep(500);
  const found = await driver.executeScript(`
    const bodies = [...document.querySelectorAll('[data-testid="message-text"]')];
    const all = bodies.flatMap((b) => [...b.querySelectorAll('*')]);
    return {
      pwned: window.__pwned ?? null,
      active: all.filter((e) => /^(script|iframe|object|embed|form)$/i.test(e.tagName)).map((e) => e.tagName),
      handlers: all.flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => e.tagName + ' ' + a.name)),
      jsUrls: all.flatMap((e) => [...e.attributes].filter((a) => /^\\s*javascript:/i.test(a.value)).map((a) => e.tagName + ' ' + a.name)),
      ready: document.body.dataset.ready,
    };`);
  assert.deepEqual(found, { pwned: null, active: [], handlers: [], jsUrls: [], ready: 'true' });
});

test('the CSP refuses an inline script injected at run time', async () => {
  const ran = await driver.executeScript(`
    const s = document.createElement('script');
    s.textContent = 'window.__inline = 1';
    document.head.appendChild(s);
    return window.__inline ?? null;`);
  assert.equal(ran, null);
});

test('the app and its WebKit processes listen on no socket', () => {
  const pids = processTreeRssKiB().members.map((m) => m.pid);
  assert.ok(pids.length >= 2, `app processes: ${pids}`);
  // Under WebDriver, WebKit's automation listens on the inspector address WebKitWebDriver
  // handed the app in WEBKIT_INSPECTOR_SERVER; that socket exists only in tests.
  const inspector = pids
    .map((p) => { try { return fs.readFileSync(`/proc/${p}/environ`, 'utf8'); } catch { return ''; } })
    .flatMap((env) => env.split('\0'))
    .filter((v) => v.startsWith('WEBKIT_INSPECTOR_SERVER='))
    .map((v) => v.slice('WEBKIT_INSPECTOR_SERVER='.length));
  // TCP, UDP and Unix sockets alike (a listening Unix socket is a door too).
  const listening = execFileSync('ss', ['-H', '-l', '-t', '-u', '-x', '-n', '-p']).toString().split('\n');
  const ours = listening
    .filter((l) => pids.some((p) => l.includes(`pid=${p},`)))
    .filter((l) => !inspector.some((addr) => l.includes(` ${addr} `)));
  assert.deepEqual(ours, []);
  console.log(`measure: listening sockets of the app's processes, besides WebDriver's inspector (${inspector.join(', ') || 'none'}): 0`);
});

test('the stored key was the one sent, and is nowhere on disk or in the logs but its key store', async () => {
  // The reply above came with the typed key: the fake provider refuses any other.
  const sent = h.fakeRequests().filter((r) => r.path === '/v1/messages');
  assert.ok(sent.length >= 1, 'a chat request was made');
  assert.equal(sent.at(-1).headers['x-api-key'], KEY);

  // After the app has gone, so nothing it holds is left unwritten.
  await quit(driver);
  driver = null;
  const ours = () =>
    appPids().filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`VIGIL_DATA_DIR=${DATA}`);
      } catch {
        return false;
      }
    });
  await waitFor('the app to exit', async () => ours().length === 0, 15000);

  // As UTF-8, and as UTF-16, the form WebKit's local storage keeps its values in.
  const forms = [Buffer.from(KEY, 'utf8'), Buffer.from(KEY, 'utf16le')];
  const hits = [];
  let files = 0;
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        files++;
        const bytes = fs.readFileSync(p);
        if (forms.some((f) => bytes.includes(f))) hits.push(path.relative(h.dataDir, p));
      }
    }
  };
  walk(DATA);
  walk(HOME);
  // The folders were used: the conversation, the settings, the log files and WebKit's own.
  for (const used of ['sessions', 'settings.json', 'logs']) assert.ok(fs.existsSync(path.join(DATA, used)), `${used} in the data folder`);
  const logs = fs.readdirSync(path.join(DATA, 'logs')).map((f) => fs.readFileSync(path.join(DATA, 'logs', f), 'utf8')).join('');
  assert.match(logs, /logging to files/, 'the log files were written');
  assert.match(printed, /logging to files/, "the app's printed log was captured");
  console.log(`measure: files scanned for the key: ${files}; bytes of printed log: ${printed.length}`);
  // Found in the store (so the scan does find it), and nowhere else.
  assert.deepEqual(hits, [path.relative(h.dataDir, STORE)]);
  assert.ok(!printed.includes(KEY), 'the key is not in what the app printed');
});
