// The agent loop through the real window: a scripted edit shows its tool card and diff and
// changes the file; a message sent while Vigil works is queued and reaches the next step;
// the sidebar keeps conversations apart.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, quit, messages, send, screenshot, By, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
const workspace = path.join(h.dataDir, 'workspace');

const SCRIPT = {
  steps: [
    { kind: 'tool_calls', text: 'Let me change that.', calls: [{ id: 'call_edit', name: 'edit', arguments: { path: 'notes.txt', old_text: 'tea', new_text: 'coffee' } }] },
    { kind: 'text', text: 'Done: you now like **coffee**.' },
    { kind: 'text', text: 'Working on it, step by step. '.repeat(30), chunk_chars: 4, delay_ms: 25 },
    { kind: 'text', text: 'Got your follow-up.' },
  ],
};

before(async () => {
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(path.join(workspace, 'notes.txt'), 'I like tea.\nAnd cake.\n');
  await h.startFakeProvider(SCRIPT);
  await h.startDriver(h.providerEnv('openai'));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const attr = (sel, name) => driver.executeScript(`const e = document.querySelector(${JSON.stringify(sel)}); return e && e.getAttribute(${JSON.stringify(name)});`);
const text = (sel) => driver.executeScript(`const e = document.querySelector(${JSON.stringify(sel)}); return e && e.innerText;`);

test('a scripted edit shows its tool card and diff, and changes the file', async () => {
  await send(driver, 'I switched to coffee, update my notes');
  await waitFor('the edit card done', async () => (await attr('[data-testid="tool-card"][data-tool-name="edit"]', 'data-status')) === 'done', 15000);
  const diff = await text('[data-testid="tool-diff"]');
  assert.match(diff, /-I like tea\./);
  assert.match(diff, /\+I like coffee\./);
  await waitFor('the final answer', async () => (await messages(driver)).at(-1).text.includes('you now like coffee'));
  assert.equal(fs.readFileSync(path.join(workspace, 'notes.txt'), 'utf8'), 'I like coffee.\nAnd cake.\n');
  await screenshot(driver, 'tool-card.png');
});

test('a message sent while Vigil works is queued and reaches its next step', async () => {
  await send(driver, 'write me something long');
  await waitFor('streaming', async () => (await messages(driver)).some((m) => m.streaming), 15000, 20);
  await send(driver, 'and mention cake');
  await waitFor('the queued marker', async () => (await driver.findElements(By.css('[data-testid="queued-message"]'))).length === 1, 5000, 20);
  await waitFor('the marker cleared', async () => (await driver.findElements(By.css('[data-testid="queued-message"]'))).length === 0, 20000);
  await waitFor('the follow-up answer', async () => (await messages(driver)).at(-1).text === 'Got your follow-up.', 20000);
  const last = h.fakeRequests().filter((r) => r.path === '/v1/chat/completions').at(-1);
  assert.match(JSON.stringify(last.body.messages), /\[INTERRUPT\] New message from user: and mention cake/);
});

test('the sidebar keeps conversations apart', async () => {
  const before = await driver.findElements(By.css('[data-testid="session-item"]'));
  await driver.findElement(By.css('[data-testid="new-session"]')).click();
  await waitFor('a second conversation, active', async () => {
    const items = await driver.findElements(By.css('[data-testid="session-item"]'));
    return items.length === before.length + 1 && (await attr('[data-testid="session-item"][data-active="true"]', 'data-session-id')) !== 'main';
  });
  assert.equal((await messages(driver)).length, 0, 'a new conversation starts empty');
  await send(driver, 'hello in the second one');
  await waitFor('its echo', async () => (await messages(driver)).at(-1)?.text === 'echo: hello in the second one');
  await driver.findElement(By.css('[data-testid="session-item"][data-session-id="main"]')).click();
  await waitFor('main again', async () => (await messages(driver)).some((m) => m.text.includes('update my notes')));
  assert.ok(!(await messages(driver)).some((m) => m.text.includes('second one')));
  const title = await text('[data-testid="session-item"][data-session-id="main"]');
  assert.match(title, /I switched to coffee/, 'named after its first message');
  await screenshot(driver, 'sidebar.png');
});
