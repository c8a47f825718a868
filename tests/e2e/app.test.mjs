// The real built app under Xvfb, driven through its window: chat streams from the fake
// provider, Stop cancels, errors show, history survives a restart, notifications reach
// the desktop's notification server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, appPids, quit, messages, send, screenshot, processTreeRssKiB, By, waitFor, sleep, ARTIFACTS } from './harness.mjs';

const h = new Harness();
let driver;

/** This test's running app: the live Vigil whose data folder is ours (not another run's). */
const ourApp = () =>
  appPids().filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`VIGIL_DATA_DIR=${h.dataDir}`);
    } catch {
      return false;
    }
  });

const SCRIPT = {
  api_key: 'sk-e2e',
  steps: [
    { kind: 'text', text: '**Vigil** here: streaming works.\n\n- one\n- two\n\n```sh\necho ok\n```', chunk_chars: 3, delay_ms: 25 },
    { kind: 'error', status: 401, error_type: 'authentication_error', message: 'invalid x-api-key' },
    { kind: 'text', text: 'This reply goes on and on. '.repeat(80), chunk_chars: 4, delay_ms: 30 },
  ],
};

before(async () => {
  await h.startFakeProvider(SCRIPT);
  await h.startNotificationMonitor();
  await h.startDriver(h.providerEnv('anthropic'));
  let ms;
  [driver, ms] = await h.launchApp();
  console.log(`measure: launch to interactive (WebDriver session + UI ready): ${ms} ms`);
});

after(async () => {
  await quit(driver);
  await h.stop();
});

test('a message streams in as rendered markdown', async () => {
  await send(driver, 'Hello from e2e');
  // The reply is visible while it is still streaming, not only at the end.
  await waitFor('a streaming assistant message', async () => (await messages(driver)).some((m) => m.role === 'assistant' && m.streaming), 15000, 20);
  const done = await waitFor('the finished reply', async () => {
    const ms = await messages(driver);
    const last = ms.at(-1);
    return last && last.role === 'assistant' && !last.streaming && last.text.includes('streaming works') ? ms : null;
  });
  const reply = done.at(-1);
  assert.match(reply.html, /<strong>Vigil<\/strong>/);
  assert.match(reply.html, /<li>one<\/li>/);
  assert.match(reply.html, /<code[^>]*>echo ok/);
  assert.deepEqual(done.map((m) => m.role), ['user', 'assistant']);
  assert.equal(done[0].text, 'Hello from e2e');
  const sent = h.fakeRequests().filter((r) => r.path === '/v1/messages');
  // The user's words go last; a <context> block with the time precedes them.
  const blocks = sent.at(-1).body.messages.at(-1).content;
  assert.equal(blocks.at(-1).text, 'Hello from e2e');
  assert.match(blocks[0].text, /^<context>\nCurrent time: /);
  const status = await driver.executeScript('return document.querySelector(\'[data-testid="status-bar"]\').innerText');
  assert.match(status, /fake-model/);
  const file = await screenshot(driver, 'chat.png');
  console.log(`artifact: ${file}`);
  await sleep(1500);
  const rss = processTreeRssKiB();
  console.log(`measure: idle RSS of the app and its webview processes: ${(rss.total / 1024).toFixed(1)} MiB (${rss.members.map((m) => `${m.comm} ${(m.rss / 1024).toFixed(0)}`).join(', ')})`);
});

// Issue 22: WebKit's web process reads all of /proc/self/smaps every 30 s by default (about
// a thousand reads, most of a megabyte, each time), three quarters of Vigil's CPU while it waits in the tray.
// Vigil sets that check to every 5 minutes (src-tauri/src/webkit.rs): over a span longer than
// WebKit's default interval, the idle page reads next to nothing.
test('the idle page does not scan its own memory every 30 s', { timeout: 60_000 }, async () => {
  const page = processTreeRssKiB().members.find((m) => m.comm.startsWith('WebKitWebProces'));
  assert.ok(page, 'the web process runs');
  const io = () => Object.fromEntries(fs.readFileSync(`/proc/${page.pid}/io`, 'utf8').trim().split('\n').map((l) => l.split(/:\s+/)).map(([k, v]) => [k, Number(v)]));
  const before = io();
  await sleep(33_000);
  const after = io();
  const [calls, bytes] = [after.syscr - before.syscr, after.rchar - before.rchar];
  console.log(`measure: the idle web process over 33 s: ${calls} read calls, ${bytes} bytes`);
  // Its idle wakes read 8 bytes each (event counters); one scan reads hundreds of KiB.
  assert.ok(bytes < 64 * 1024, `the idle web process read ${bytes} bytes in ${calls} calls in 33 s: it scanned its memory`);
});

test('a rejected key shows a clear error and keeps the message', async () => {
  await send(driver, 'this one fails');
  const banner = await waitFor('the error banner', async () => {
    const els = await driver.findElements(By.css('[data-testid="error-banner"]'));
    return els.length ? els[0] : null;
  });
  assert.match(await driver.executeScript('return arguments[0].innerText', banner), /API key was rejected/);
  const ms = await messages(driver);
  assert.equal(ms.at(-1).text, 'this one fails');
});

test('Stop cancels a streaming reply and keeps what was said', async () => {
  await send(driver, 'talk for a while');
  await waitFor('streaming', async () => (await messages(driver)).some((m) => m.streaming && m.text.length > 20), 15000, 20);
  await driver.findElement(By.css('[data-testid="stop"]')).click();
  const ms = await waitFor('the stopped reply', async () => {
    const ms = await messages(driver);
    return ms.at(-1).role === 'assistant' && !ms.at(-1).streaming ? ms : null;
  });
  const kept = ms.at(-1).text;
  assert.ok(kept.includes('This reply goes on'), kept);
  assert.ok(kept.length < 'This reply goes on and on. '.repeat(80).length, 'stopped before the end');
  // Send is back: the turn is over.
  await waitFor('send button', async () => (await driver.findElements(By.css('[data-testid="send"]'))).length > 0);
});

test('a notification reaches the desktop notification server', async () => {
  await driver.findElement(By.css('[data-testid="open-settings"]')).click();
  await driver.findElement(By.css('[data-testid="settings-notify"]')).click();
  await waitFor('the Notify call on D-Bus', async () => /member=Notify[\s\S]*Notifications work\./.test(h.notificationLog()), 10000);
  await sleep(500);
  try {
    execFileSync('import', ['-window', 'root', path.join(ARTIFACTS, 'desktop-with-notification.png')]);
  } catch (e) {
    console.log(`note: desktop screenshot failed: ${e.message}`);
  }
});

test('quitting the app ends its process, and reopening it shows the conversation again', async () => {
  const running = ourApp();
  assert.equal(running.length, 1, `one app running: ${running}`);
  await quit(driver);
  driver = null;
  // Gone, not hidden or left behind: nothing here kills it.
  await waitFor('the app process to exit', async () => !appPids().includes(running[0]), 15000);
  const [again, ms] = await h.launchApp();
  driver = again;
  console.log(`measure: relaunch to interactive: ${ms} ms`);
  const shown = await waitFor('history', async () => {
    const m = await messages(driver);
    return m.length >= 5 ? m : null;
  });
  assert.deepEqual(
    shown.map((m) => [m.role, m.text.slice(0, 22)]),
    [
      ['user', 'Hello from e2e'],
      ['assistant', 'Vigil here: streaming '],
      ['user', 'this one fails'],
      ['user', 'talk for a while'],
      ['assistant', 'This reply goes on and'],
    ],
  );
  await screenshot(driver, 'chat-after-restart.png');
});
