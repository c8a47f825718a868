// Configuring a provider through the Settings pane of the real app, from a data directory
// whose settings file is broken: the user is told, nothing is overwritten, the key never
// lands in the settings file, and chat then works over the OpenAI-compatible protocol.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, quit, messages, send, screenshot, By, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
const BROKEN = '{ "provider": { "kind": "anthropic", ';

before(async () => {
  await h.startFakeProvider({ api_key: 'sk-settings-e2e', steps: [] });
  fs.writeFileSync(path.join(h.dataDir, 'settings.json'), BROKEN);
  // Only the data dir comes from the environment: everything else is set in the window.
  const env = { VIGIL_DATA_DIR: h.dataDir, VIGIL_NO_KEYRING: '1' };
  for (const k of ['VIGIL_PROVIDER', 'VIGIL_BASE_URL', 'VIGIL_MODEL', 'VIGIL_API_KEY', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY']) env[k] = '';
  await h.startDriver(env);
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const byId = (id) => driver.findElement(By.css(`[data-testid="${id}"]`));
const innerText = (el) => driver.executeScript('return arguments[0].innerText', el);

async function fill(id, value) {
  const el = await byId(id);
  await el.clear();
  await el.sendKeys(value);
}

test('a broken settings file is reported and kept, not overwritten', async () => {
  await byId('open-settings').click();
  const warning = await innerText(await byId('settings-warnings'));
  assert.match(warning, /could not be read/);
  const aside = fs.readdirSync(h.dataDir).filter((f) => f.startsWith('settings.json.broken-'));
  assert.equal(aside.length, 1);
  assert.equal(fs.readFileSync(path.join(h.dataDir, aside[0]), 'utf8'), BROKEN);
});

test('the user configures an OpenAI-compatible provider, tests it, saves it and chats', async () => {
  await driver.findElement(By.css('[data-testid="settings-kind"] option[value="openai"]')).click();
  await fill('settings-base-url', `${h.fakeUrl}/v1`);
  await fill('settings-model', 'fake-model');
  await fill('settings-api-key', 'sk-wrong');
  await byId('settings-test').click();
  let verdict = await waitFor('a verdict', async () => (await driver.findElements(By.css('[data-testid="settings-verdict"]')))[0]);
  assert.equal(await verdict.getAttribute('data-ok'), 'false');
  assert.match(await innerText(verdict), /API key was rejected/);

  await fill('settings-api-key', 'sk-settings-e2e');
  await byId('settings-test').click();
  verdict = await waitFor('a good verdict', async () => {
    const v = (await driver.findElements(By.css('[data-testid="settings-verdict"]')))[0];
    return v && (await v.getAttribute('data-ok')) === 'true' ? v : null;
  });
  assert.match(await innerText(verdict), /Connected/);
  await screenshot(driver, 'settings.png');
  await byId('settings-save').click();
  await waitFor('the panel to close', async () => (await driver.findElements(By.css('[data-testid="settings-panel"]'))).length === 0);

  const saved = fs.readFileSync(path.join(h.dataDir, 'settings.json'), 'utf8');
  assert.equal(JSON.parse(saved).provider.kind, 'openai');
  assert.equal(JSON.parse(saved).provider.base_url, `${h.fakeUrl}/v1`);
  assert.ok(!saved.includes('sk-settings-e2e'), 'the key is not in the settings file');
  const keyFile = path.join(h.dataDir, 'secrets', 'openai-api-key.key');
  assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);

  await send(driver, 'configured by hand');
  await waitFor('the echo', async () => (await messages(driver)).at(-1)?.text === 'echo: configured by hand');
  const last = h.fakeRequests().filter((r) => r.path === '/v1/chat/completions').at(-1);
  assert.equal(last.headers.authorization, 'Bearer sk-settings-e2e');
  const status = await innerText(await byId('status-bar'));
  assert.match(status, /fake-model/);
});

test('without a keyring the settings pane says where the key is kept', async () => {
  await byId('open-settings').click();
  const warning = await innerText(await byId('settings-warnings'));
  assert.match(warning, /readable only by you/);
});

test('the Health section says what runs now and counts the session locks the chat took', async () => {
  const section = await byId('settings-health');
  await driver.executeScript('arguments[0].scrollIntoView({ block: "end" })', section);
  const headline = await waitFor('the health check', async () => (await driver.findElements(By.css('[data-testid="health-headline"]')))[0]);
  assert.equal(await headline.getAttribute('data-state'), 'ok');
  assert.match(await innerText(headline), /^Healthy · up \d+ (s|min)/);
  const rows = {};
  for (const row of await driver.findElements(By.css('[data-testid="health-row"]'))) {
    rows[await row.getAttribute('data-key')] = await innerText(row.findElement(By.css('dd')));
  }
  assert.equal(rows.running, 'Nothing');
  assert.ok(Number(/^(\d+) held · (\d+) taken/.exec(rows.locks)?.[2]) > 0, `the chat took session locks: ${rows.locks}`);
  assert.match(rows.heartbeat, /\d+ delivered · \d+ nothing to report/);
  assert.match(rows.processes, /^0 running$/);
  await screenshot(driver, 'settings-health.png');
});
