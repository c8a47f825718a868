// Issue 7, keyboard and polish. A first run with an empty data directory and no provider in
// the environment: the chat shows the walkthrough, the user picks Anthropic pointed at the
// fake provider, tests the connection (a wrong key first), saves, and chats. Then the
// keyboard: Ctrl+N opens a new conversation, Ctrl+L and "/" go to the message box, Ctrl+3
// opens Routines and Escape closes it without stopping anything, Ctrl+/ shows the shortcuts,
// and a bare Escape stops a streaming reply.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Key } from 'selenium-webdriver';
import { Harness, fill as fillInput, quit, messages, send, screenshot, By, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
const KEY = 'sk-onboarding-e2e';

before(async () => {
  await h.startFakeProvider({ api_key: KEY, steps: [] });
  // Only the data dir comes from the environment: the provider is chosen in the window.
  const env = { VIGIL_DATA_DIR: h.dataDir, VIGIL_NO_KEYRING: '1' };
  for (const k of ['VIGIL_PROVIDER', 'VIGIL_BASE_URL', 'VIGIL_MODEL', 'VIGIL_API_KEY', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY']) env[k] = '';
  await h.startDriver(env);
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const css = (selector) => driver.findElement(By.css(selector));
const byId = (id) => css(`[data-testid="${id}"]`);
const count = (selector) => driver.executeScript(`return document.querySelectorAll(${JSON.stringify(selector)}).length;`);
const innerText = (el) => driver.executeScript('return arguments[0].innerText', el);
const focused = () => driver.executeScript('return document.activeElement ? document.activeElement.dataset.testid ?? null : null;');
const blur = () => driver.executeScript('document.activeElement?.blur();');
const fill = (id, value) => fillInput(driver, `[data-testid="${id}"]`, value);
/** Ctrl plus a key, to whatever has the focus. */
const ctrl = (key) => driver.actions().keyDown(Key.CONTROL).sendKeys(key).keyUp(Key.CONTROL).perform();
const press = (key) => driver.actions().sendKeys(key).perform();

async function verdict() {
  return waitFor('a verdict', async () => (await driver.findElements(By.css('[data-testid="welcome-verdict"]')))[0]);
}

test('a first run walks the user through choosing a provider, then chats', async () => {
  await waitFor('the walkthrough', async () => (await count('[data-testid="welcome"][data-step="choose"]')) === 1);
  assert.equal(await count('[data-testid="empty-state"]'), 0, 'the walkthrough replaces the hint to Settings');
  await screenshot(driver, 'onboarding-choose.png');

  await byId('welcome-choice-anthropic').click();
  await byId('welcome-continue').click();
  await waitFor('the details step', async () => (await count('[data-testid="welcome"][data-step="details"]')) === 1);
  assert.equal(await count('[data-testid="welcome-api-key"]'), 1, 'Anthropic asks for a key');

  // Test against Anthropic's own server without a key: the field says what is missing and
  // nothing is sent. (A server on this machine may need no key: there it is optional.)
  await fill('welcome-model', 'fake-model');
  await byId('welcome-test').click();
  await waitFor('the missing key', async () => /API key/.test((await innerText(await byId('welcome-api-key-error'))) ?? ''));
  assert.equal(await count('[data-testid="welcome-verdict"]'), 0, 'nothing was tried');

  await fill('welcome-base-url', h.fakeUrl);
  await fill('welcome-api-key', 'sk-wrong');
  await byId('welcome-test').click();
  let v = await verdict();
  assert.equal(await v.getAttribute('data-ok'), 'false');
  assert.match(await innerText(v), /API key was rejected/);

  // Editing makes the verdict stale.
  await fill('welcome-api-key', KEY);
  await waitFor('the stale verdict gone', async () => (await count('[data-testid="welcome-verdict"]')) === 0, 5000);
  await byId('welcome-test').click();
  v = await waitFor('a good verdict', async () => {
    const el = (await driver.findElements(By.css('[data-testid="welcome-verdict"]')))[0];
    return el && (await el.getAttribute('data-ok')) === 'true' ? el : null;
  });
  assert.match(await innerText(v), /Connected/);
  await screenshot(driver, 'onboarding-details.png');

  // The verdict above it just grew the card: bring the button into view as a user would.
  const save = await byId('welcome-save');
  await driver.executeScript('arguments[0].scrollIntoView({ block: "center" })', save);
  await save.click();
  await waitFor('the walkthrough gone', async () => (await count('[data-testid="welcome"]')) === 0);
  assert.equal(await count('[data-testid="empty-state"]'), 1);
  assert.equal(await focused(), 'chat-input', 'the message box has the focus after saving');

  const saved = JSON.parse(fs.readFileSync(path.join(h.dataDir, 'settings.json'), 'utf8'));
  assert.equal(saved.provider.kind, 'anthropic');
  assert.equal(saved.provider.base_url, h.fakeUrl);
  assert.equal(saved.provider.model, 'fake-model');
  assert.ok(!JSON.stringify(saved).includes(KEY), 'the key is not in the settings file');
  const keyFile = path.join(h.dataDir, 'secrets', 'anthropic-api-key.key');
  assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);

  await send(driver, 'hello after the walkthrough');
  await waitFor('the echo', async () => (await messages(driver)).at(-1)?.text === 'echo: hello after the walkthrough');
  const last = h.fakeRequests().filter((r) => r.path === '/v1/messages').at(-1);
  assert.equal(last.headers['x-api-key'], KEY);
  assert.match(await innerText(await byId('status-bar')), /fake-model/);
});

test('the keyboard reaches conversations, the message box, panes and Stop', async () => {
  // Ctrl+N: a new conversation, shown and active, with the focus in its message box.
  const itemsBefore = await count('[data-testid="session-item"]');
  await ctrl('n');
  await waitFor('a new conversation, active', async () => {
    const active = await driver.executeScript(
      'return document.querySelector(\'[data-testid="session-item"][data-active="true"]\')?.dataset.sessionId ?? null;',
    );
    return (await count('[data-testid="session-item"]')) === itemsBefore + 1 && active !== null && active !== 'main';
  });
  assert.equal((await messages(driver)).length, 0);
  assert.equal(await focused(), 'chat-input');

  // Ctrl+L and "/" from outside a text field; the "/" is not typed into the box.
  await blur();
  assert.notEqual(await focused(), 'chat-input');
  await ctrl('l');
  await waitFor('the focus in the message box', async () => (await focused()) === 'chat-input', 5000);
  await blur();
  await press('/');
  await waitFor('the focus in the message box', async () => (await focused()) === 'chat-input', 5000);
  assert.equal(await driver.executeScript('return document.querySelector(\'[data-testid="chat-input"]\').value;'), '');

  // The header shows the keys.
  assert.equal(await byId('routines-toggle').getAttribute('title'), 'Routines (Ctrl+3)');

  // Ctrl+3 opens Routines, even from the message box; Escape closes it.
  await ctrl('3');
  await waitFor('the routines pane', async () => (await count('[data-testid="routines-pane"]')) === 1, 5000);
  await press(Key.ESCAPE);
  await waitFor('the pane closed', async () => (await count('[data-testid="routines-pane"]')) === 0, 5000);

  // Ctrl+/ lists the shortcuts; Escape closes the list.
  await ctrl('/');
  await waitFor('the shortcuts help', async () => (await count('[data-testid="shortcuts-help"]')) === 1, 5000);
  assert.match(await innerText(await byId('shortcuts-help')), /Ctrl\+N[\s\S]*Ctrl\+3/);
  await screenshot(driver, 'shortcuts-help.png');
  await press(Key.ESCAPE);
  await waitFor('the help closed', async () => (await count('[data-testid="shortcuts-help"]')) === 0, 5000);

  // A long, slow reply: Escape with a pane open only closes the pane; a bare Escape stops it.
  const long = 'This reply goes on and on. '.repeat(80);
  const res = await fetch(`${h.fakeUrl}/_script`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: KEY, steps: [{ kind: 'text', text: long, chunk_chars: 4, delay_ms: 30 }] }),
  });
  assert.ok(res.ok, `the fake provider took the script (${res.status})`);
  await send(driver, 'talk for a while');
  await waitFor('streaming', async () => (await messages(driver)).some((m) => m.streaming && m.text.length > 20), 15000, 20);
  await ctrl(',');
  await waitFor('the settings pane', async () => (await count('[data-testid="settings-panel"]')) === 1, 5000);
  await press(Key.ESCAPE);
  await waitFor('the settings pane closed', async () => (await count('[data-testid="settings-panel"]')) === 0, 5000);
  assert.ok((await messages(driver)).at(-1).streaming, 'closing a pane did not stop the reply');
  assert.equal(await count('[data-testid="stop"]'), 1);

  await press(Key.ESCAPE);
  const ms = await waitFor('the stopped reply', async () => {
    const all = await messages(driver);
    return all.at(-1).role === 'assistant' && !all.at(-1).streaming ? all : null;
  });
  assert.ok(ms.at(-1).text.includes('This reply goes on'));
  assert.ok(ms.at(-1).text.length < long.length, 'stopped before the end');
  await waitFor('send button', async () => (await count('[data-testid="stop"]')) === 0);
});
