// The security pass in the real window: hostile HTML in an assistant reply renders inert,
// an inline script injected at run time is refused by the CSP, the app and its WebKit
// processes listen on no socket, and the API key is nowhere in the data folder but the
// key store.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Harness, quit, messages, send, processTreeRssKiB, waitFor, sleep, By } from './harness.mjs';

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
let driver;

before(async () => {
  await h.startFakeProvider({ api_key: KEY, steps: [{ kind: 'text', text: PAYLOAD }] });
  await h.startDriver(h.providerEnv('anthropic', { VIGIL_API_KEY: KEY }));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
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
  const pids = processTreeRssKiB('vigil').members.map((m) => m.pid);
  assert.ok(pids.length >= 2, `app processes: ${pids}`);
  // Under WebDriver, WebKit's automation listens on the inspector address WebKitWebDriver
  // handed the app in WEBKIT_INSPECTOR_SERVER; that socket exists only in tests.
  const inspector = pids
    .map((p) => { try { return fs.readFileSync(`/proc/${p}/environ`, 'utf8'); } catch { return ''; } })
    .flatMap((env) => env.split('\0'))
    .filter((v) => v.startsWith('WEBKIT_INSPECTOR_SERVER='))
    .map((v) => v.slice('WEBKIT_INSPECTOR_SERVER='.length));
  const listening = execFileSync('ss', ['-H', '-l', '-t', '-u', '-n', '-p']).toString().split('\n');
  const ours = listening
    .filter((l) => pids.some((p) => l.includes(`pid=${p},`)))
    .filter((l) => !inspector.some((addr) => l.includes(` ${addr} `)));
  assert.deepEqual(ours, []);
  console.log(`measure: listening sockets of the app's processes, besides WebDriver's inspector (${inspector.join(', ') || 'none'}): 0`);
});

test('the API key is nowhere in the data folder but the key store', () => {
  const hits = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      // The key store itself, and the test's own logs of what was sent.
      if (e.name === 'secrets' || e.name === 'script.json' || p === h.fakeLog || p === h.dbusLog) continue;
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && fs.readFileSync(p).includes(KEY)) hits.push(path.relative(h.dataDir, p));
    }
  };
  walk(h.dataDir);
  assert.ok(fs.readdirSync(h.dataDir).includes('sessions'), 'the folder was used');
  assert.deepEqual(hits, []);
});
