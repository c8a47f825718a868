// Issue 18, item 8: the window never leaves the app. A link in a compaction summary (model
// output, like a reply) is copied when clicked, not followed; a terminal's OSC 8 hyperlink
// likewise; and the shell's navigation guard refuses a navigation to another origin even
// when the page itself asks for one. Every link points at a local server the test runs, so
// a navigation that got through would really load (and the server would see it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Harness, quit, messages, send, screenshot, By, waitFor, sleep } from './harness.mjs';

const h = new Harness();
let driver;
let server;
let base;
/** Paths the local server was asked for: any entry means the window (or something) went there. */
const hits = [];

const SUMMARY = (url) =>
  `The user asked forty times about the build. The fix is described in [the build guide](${url}/summary-link); ` +
  'everything else was small talk.';
// printf's format: OSC 8 opens a link, its text, OSC 8 with no address closes it.
const OSC8 = (url) => `printf '\\033]8;;${url}/terminal-link\\033\\\\Open the build guide\\033]8;;\\033\\\\\\n'`;

before(async () => {
  server = http.createServer((req, res) => {
    hits.push(req.url);
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>Not Vigil</title><p id="elsewhere">You left the app.</p>');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;

  // A conversation far past the context window (~200 k estimated tokens against Anthropic's
  // 200 k window, compacted from 80 %): the next message compacts it first, and the fake
  // provider's first step is the summary.
  fs.mkdirSync(path.join(h.dataDir, 'sessions'));
  const t0 = Date.now() - 3_600_000;
  const lines = [];
  for (let i = 0; i < 40; i++) {
    lines.push({ role: 'user', content: [{ type: 'text', text: `Question ${i}: why does the build fail?` }], ts: t0 + i * 60_000 });
    lines.push({
      role: 'assistant',
      content: [{ type: 'text', text: `Answer ${i}: ` + 'a long look at the build log. '.repeat(700) }],
      ts: t0 + i * 60_000 + 5_000,
      model: 'fake-model',
      stop_reason: 'end_turn',
    });
  }
  fs.writeFileSync(path.join(h.dataDir, 'sessions', 'main.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');

  await h.startFakeProvider({
    steps: [
      { kind: 'text', text: SUMMARY(base) },
      { kind: 'text', text: 'Summarised and ready.' },
      { kind: 'tool_calls', calls: [{ id: 'call_osc8', name: 'exec', arguments: { command: OSC8(base), background: true } }] },
      { kind: 'text', text: 'It printed a link.' },
    ],
    fallback: { kind: 'text', text: 'Noted.' },
  });
  await h.startDriver(h.providerEnv('anthropic', { VIGIL_APPROVAL_POLICY: 'full-auto' }));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
  server?.close();
});

const css = (sel) => driver.findElement(By.css(sel));
const attr = (sel, name) =>
  driver.executeScript(`const e = document.querySelector(${JSON.stringify(sel)}); return e && e.getAttribute(${JSON.stringify(name)});`);
const innerText = (sel) => driver.executeScript(`const e = document.querySelector(${JSON.stringify(sel)}); return e ? e.innerText : null;`);

/** Where the window is and whether it is still the app with its chat. */
async function where() {
  return driver.executeScript(`return {
    href: location.href,
    ready: document.body.dataset.ready === 'true',
    chat: !!document.querySelector('[data-testid="chat-input"]'),
    elsewhere: !!document.getElementById('elsewhere'),
  };`);
}

async function assertStillTheApp(what) {
  // Long enough for a navigation to a local server to have loaded.
  await sleep(1500);
  const w = await where();
  assert.match(w.href, /^tauri:\/\/localhost(\/|$)/, `${what}: the window stays on the app's origin (${w.href})`);
  assert.ok(w.ready && w.chat && !w.elsewhere, `${what}: the app and its chat are still there ${JSON.stringify(w)}`);
  assert.deepEqual(hits, [], `${what}: nothing was loaded from the link's address`);
  assert.equal((await driver.getAllWindowHandles()).length, 1, `${what}: no second window was opened`);
}

test('a link in a compaction summary is copied, and the window stays on the app', { timeout: 90_000 }, async () => {
  await send(driver, 'Where were we?');
  await waitFor('the reply after compaction', async () => (await messages(driver)).at(-1)?.text === 'Summarised and ready.', 40000);
  assert.ok(h.fakeRequests().some((r) => JSON.stringify(r.body).includes('Question 0')), 'the summary request saw the old messages');
  await waitFor('the compaction note', async () => (await driver.findElements(By.css('[data-testid="compacted-note"]'))).length > 0);

  // The summary's text comes with the conversation's history: open another conversation and
  // come back, as a user returning to it would.
  await css('[data-testid="new-session"]').click();
  await waitFor('the new conversation', async () => (await attr('[data-testid="session-item"][data-active="true"]', 'data-session-id')) !== 'main');
  await css('[data-testid="session-item"][data-session-id="main"]').click();
  await waitFor('the summary block', async () => (await driver.findElements(By.css('[data-testid="summary"] details'))).length > 0, 15000);

  await css('[data-testid="summary"] details > summary').click();
  const link = await waitFor('the link in the summary', async () => {
    const found = await driver.findElements(By.css(`[data-testid="summary-text"] a[href="${base}/summary-link"]`));
    return found[0];
  });
  assert.equal(await link.getText(), 'the build guide');
  await link.click(); // a real click, through WebDriver

  await assertStillTheApp('after clicking the summary link');
  const note = await waitFor('the note under the summary', () => innerText('[data-testid="summary"] [data-testid="link-note"]'), 5000);
  // Copied where the webview has a clipboard; otherwise the address is shown to copy by hand.
  assert.ok(note === `Link copied: ${base}/summary-link` || note === `${base}/summary-link`, note);
  assert.equal((await messages(driver)).at(-1).text, 'Summarised and ready.');
  await screenshot(driver, 'summary-link-copied.png');
});

test("a terminal's OSC 8 hyperlink is copied, not opened", { timeout: 60_000 }, async () => {
  await send(driver, 'print the link');
  await waitFor('the exec card', async () => (await attr('[data-testid="tool-card"][data-tool-name="exec"]', 'data-status')) === 'done', 20000);
  await css('[data-testid="processes-toggle"]').click();
  const id = await waitFor('the process', () => attr('[data-testid="process-item"]', 'data-process-id'), 10000);
  await css(`[data-testid="process-item"][data-process-id="${id}"]`).click();
  await waitFor('the link text in the terminal', async () =>
    ((await driver.executeScript('return window.__vigilTerminalText ? window.__vigilTerminalText(arguments[0]) : ""', id)) ?? '').includes('Open the build guide'), 10000);

  // Where the link's text is drawn (xterm's DOM renderer): the middle of its "build".
  const at = await driver.executeScript(`
    const rows = document.querySelector('[data-testid="process-terminal"] .xterm-rows');
    const walker = document.createTreeWalker(rows, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const i = n.data.indexOf('build');
      if (i < 0) continue;
      const range = document.createRange();
      range.setStart(n, i);
      range.setEnd(n, i + 5);
      const box = range.getBoundingClientRect();
      return { x: Math.round(box.left + box.width / 2), y: Math.round(box.top + box.height / 2) };
    }
    return null;`);
  assert.ok(at, 'the link text is drawn');
  const actions = driver.actions({ async: true });
  await actions.move({ origin: 'viewport', x: at.x, y: at.y }).perform();
  await sleep(400); // xterm finds the link under the pointer on hover
  await actions.move({ origin: 'viewport', x: at.x + 1, y: at.y }).perform();
  await sleep(300);
  await driver.actions({ async: true }).press().release().perform();

  const note = await waitFor('the note over the terminal', () => innerText('.frame [data-testid="link-note"]'), 5000);
  assert.match(note, new RegExp(`^(Link copied: )?${base.replace(/[.]/g, '\\.')}/terminal-link`));
  await assertStillTheApp('after clicking the terminal link');
  await screenshot(driver, 'terminal-link-copied.png');
});

test('the shell refuses a navigation to another origin that the page itself starts', { timeout: 30_000 }, async () => {
  // What no UI handler sees: a script (or the context menu's "Open Link", or a dropped URL)
  // navigating the window. The guard in the shell refuses it.
  await driver.executeScript('location.href = arguments[0];', `${base}/scripted`);
  await assertStillTheApp('after location.href = another origin');
  await driver.executeScript(
    `const a = document.createElement('a'); a.href = arguments[0]; a.textContent = 'plain link';
     a.dataset.testid = 'plain-link';
     a.style.cssText = 'position:fixed;top:40%;left:40%;z-index:99999;padding:8px;background:#ff0';
     document.body.append(a);`,
    `${base}/plain-anchor`,
  );
  await css('[data-testid="plain-link"]').click();
  await assertStillTheApp('after clicking an anchor no handler looks at');
  // Both were refused by the shell, and it says so in its log.
  const logs = path.join(h.dataDir, 'logs');
  const refused = () =>
    fs.readdirSync(logs).map((f) => path.join(logs, f)).filter((f) => fs.statSync(f).isFile())
      .map((f) => fs.readFileSync(f, 'utf8')).join('')
      .split('\n').filter((l) => l.includes(`refused a navigation of the window to ${base}`));
  await waitFor('two refusals in the log', async () => refused().length >= 2, 5000);
  // Exactly these two: the summary's and the terminal's links never got as far as the guard.
  assert.equal(refused().length, 2, refused().join('\n'));
  assert.ok(!refused().some((l) => l.includes('scripted') || l.includes('plain-anchor')), 'the log names the origin, not the path');
});
