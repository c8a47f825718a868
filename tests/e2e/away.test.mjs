// "While you were away", through the real window. The app is told where the system bus is
// (DBUS_SYSTEM_BUS_ADDRESS, as zbus reads it): a private bus where a fake systemd-logind
// (crates/vigil-core/tests/fixtures/fake-logind.py) serves the login session the app finds
// itself in. The test plays the desktop: it sets the session's IdleHint (with the time idling
// began, IdleSinceHint, as logind reports it) and clears it again, as an idle monitor does.
//
// A short absence shows nothing. Then the user starts a build in the background in one
// conversation, goes to another, and leaves for two hours (by the desktop's clock). Meanwhile
// the build ends and its conversation carries on by itself until it needs an approval, and a
// routine fails. Back at the computer, one card lists what ran, what failed and what waits;
// its lines open the conversation (at the approval card) and the routine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { ROOT, Harness, messages, quit, screenshot, send, By, sleep, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
let logind;
let conversation = null;

const FIXTURES = path.join(ROOT, 'crates', 'vigil-core', 'tests', 'fixtures');
const FAILURE = 'The backup disk is not mounted.';
const SCRIPT = {
  steps: [
    // The user's turn: a build in the background, approved on its card.
    { kind: 'tool_calls', calls: [{ id: 'call_build', name: 'exec', arguments: { command: 'sleep 2; echo built', background: true } }] },
    { kind: 'text', text: 'The build runs in the background; I will carry on when it ends.' },
    // The continuation, while the user is away: the next step needs an approval.
    { kind: 'tool_calls', calls: [{ id: 'call_deploy', name: 'exec', arguments: { command: 'touch deployed' } }] },
  ],
  // The routine's job: the provider refuses it (400 is not retried), so the run fails.
  fallback: { kind: 'error', status: 400, error_type: 'invalid_request_error', message: FAILURE },
};

/** The fake logind's events, as JSON objects, in order. */
const seen = [];

async function startLogind() {
  const socket = path.join(h.dataDir, 'system-bus');
  const bus = h.spawn('dbus-daemon', [`--config-file=${path.join(FIXTURES, 'private-bus.conf')}`, `--address=unix:path=${socket}`, '--print-address', '--nofork']);
  const address = await new Promise((resolve, reject) => {
    readline.createInterface({ input: bus.stdout }).once('line', resolve);
    bus.on('exit', (code) => reject(new Error(`dbus-daemon exited with ${code}`)));
  });
  logind = h.spawn('/usr/bin/python3', [path.join(FIXTURES, 'fake-logind.py'), address], { stdio: ['pipe', 'pipe', 'inherit'] });
  readline.createInterface({ input: logind.stdout }).on('line', (line) => seen.push(JSON.parse(line)));
  await waitFor('the fake logind', async () => seen.some((e) => e.event === 'ready'), 10000);
  return address;
}

/** Sets the session's hints as a desktop does, and waits until the app has read them. */
async function desktop(hints) {
  const from = seen.length;
  logind.stdin.write(`${JSON.stringify(hints)}\n`);
  await waitFor('the app to read the new hints', async () =>
    seen.slice(from).some((e) => e.event === 'read' && Object.entries(hints).every(([k, v]) => e[k] === v)), 10000);
}

before(async () => {
  fs.mkdirSync(path.join(h.dataDir, 'workspace'), { recursive: true });
  // No heartbeat: the fake's answers are for the conversation and the routine only.
  fs.writeFileSync(path.join(h.dataDir, 'settings.json'), JSON.stringify({ heartbeat: { enabled: false } }));
  const address = await startLogind();
  await h.startFakeProvider(SCRIPT);
  await h.startDriver(h.providerEnv('anthropic', { VIGIL_APPROVAL_POLICY: 'ask', DBUS_SYSTEM_BUS_ADDRESS: address }));
  [driver] = await h.launchApp();
  await waitFor('the app to find its login session', async () => seen.some((e) => e.event === 'session') && seen.some((e) => e.event === 'read'), 15000);
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const css = (sel) => driver.findElement(By.css(sel));
const attr = (sel, name) =>
  driver.executeScript(`const e = document.querySelector(${JSON.stringify(sel)}); return e && e.getAttribute(${JSON.stringify(name)});`);
const activeSession = () => attr('[data-testid="session-item"][data-active="true"]', 'data-session-id');
const card = () => driver.findElements(By.css('[data-testid="away-card"]'));
const cardLines = () =>
  driver.executeScript(`return [...document.querySelectorAll('[data-testid="away-line"]')].map((l) => ({
    kind: l.dataset.kind, what: l.querySelector('.what').innerText.replace(/\\s+/g, ' ').trim() }))`);
const usSince = (msAgo) => (Date.now() - msAgo) * 1000;

test('ten minutes away shows no card', async () => {
  await desktop({ IdleHint: true, IdleSinceHint: usSince(10 * 60_000) });
  await desktop({ IdleHint: false });
  // The app has read the return; a card would come with the same event loop turn.
  await sleep(1500);
  assert.equal((await card()).length, 0);
});

test('back after two hours, one card says what ran, failed and waits, and opens each', async () => {
  // Before leaving: a build in the background in a new conversation, then back to the first.
  await css('[data-testid="new-session"]').click();
  conversation = await waitFor('the new conversation', async () => {
    const id = await activeSession();
    return id && id !== 'main' ? id : null;
  }, 10000);
  await send(driver, 'Build the release in the background');
  await waitFor('the approval card', async () => (await attr('[data-testid="approval-card"][data-state="pending"]', 'data-state')) === 'pending', 15000);
  await css('[data-testid="approval-card"][data-state="pending"] [data-testid="approval-approve"]').click();
  await waitFor('the agent’s word', async () => (await messages(driver)).some((m) => m.text.includes('I will carry on when it ends')), 15000);
  // A routine due in a few seconds, one attempt only.
  const added = await driver.executeAsyncScript(
    `const done = arguments[0];
     window.__TAURI_INTERNALS__.invoke('add_routine', { draft: { title: 'Backup', description: 'Copy ~/Documents to the backup disk.',
       schedule: '', next_run_at: Date.now() + 6000, execution_mode: 'isolated', max_retry: 0 } })
       .then((r) => done(r.routine.id), (e) => done('error: ' + JSON.stringify(e)));`,
  );
  assert.doesNotMatch(added, /^error/);
  await css('[data-testid="session-item"][data-session-id="main"]').click();
  await waitFor('main shown', async () => (await activeSession()) === 'main', 5000);

  // Away, idle since two hours ago by the desktop's clock.
  await desktop({ IdleHint: true, IdleSinceHint: usSince(2 * 3600_000) });
  // Meanwhile: the build ends and its conversation asks to deploy; the routine's job fails.
  await waitFor('the continuation asking to deploy', async () => h.fakeRequests().filter((r) => r.path === '/v1/messages').length >= 3, 20000);
  await waitFor('the routine to fail', async () =>
    h.fakeRequests().filter((r) => r.path === '/v1/messages').length >= 4 &&
    fs.readdirSync(path.join(h.dataDir, 'routines', 'runs')).some((f) => fs.readFileSync(path.join(h.dataDir, 'routines', 'runs', f), 'utf8').includes('"failed"')), 30000);
  assert.equal((await card()).length, 0, 'no card while the user is away');

  // Back.
  await desktop({ IdleHint: false });
  await waitFor('the card', async () => (await card()).length === 1, 10000);
  const title = 'Build the release in the background';
  assert.deepEqual(await cardLines(), [
    { kind: 'ran', what: `${title} Vigil continued on its own` },
    { kind: 'failed', what: `Backup failed: The provider refused the request (HTTP 400): ${FAILURE}` },
    { kind: 'waiting', what: `${title} waits for your approval: touch deployed` },
  ]);
  const headings = await driver.executeScript(`return [...document.querySelectorAll('[data-testid="away-card"] h3')].map((h) => h.innerText)`);
  assert.deepEqual(headings.map((t) => t.toLowerCase()), ['ran', 'failed or unknown', 'waiting for you']);
  assert.match(await driver.executeScript(`return document.querySelector('[data-testid="away-span"]').innerText`), /^2 h, since /);
  await screenshot(driver, 'away-card.png');
  assert.equal(await activeSession(), 'main', 'the card opens nothing by itself');

  // The waiting line opens its conversation at the approval card.
  const line = async (kind) => (await driver.findElements(By.css(`[data-testid="away-line"][data-kind="${kind}"]`)))[0];
  await (await line('waiting')).click();
  await waitFor('the conversation opened', async () => (await activeSession()) === conversation, 10000);
  await waitFor('the pending approval shown', async () =>
    driver.executeScript(`const c = document.querySelector('[data-testid="approval-card"][data-state="pending"]');
      return !!c && c.innerText.includes('touch deployed')`), 10000);
  await screenshot(driver, 'away-opened-conversation.png');
  // The routine's line opens the Routines pane at it.
  await (await line('failed')).click();
  await waitFor('the routines pane at Backup', async () =>
    (await attr(`[data-testid="routines-pane"] [data-testid="routine-item"][data-routine-id="${added}"]`, 'data-focused')) === 'true', 10000);
  await css('[data-testid="routines-pane"] .pane-close').click();
  await waitFor('the pane closed', async () => (await driver.findElements(By.css('[data-testid="routines-pane"]'))).length === 0, 5000);
  // Closed, it is gone.
  await css('[data-testid="away-dismiss"]').click();
  await waitFor('the card closed', async () => (await card()).length === 0, 5000);
});
