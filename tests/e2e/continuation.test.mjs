// Work goes on where it started, through the real window. In a second conversation the
// agent starts a background command and the user goes to another conversation; when the
// command ends, that conversation's agent carries on by itself: the sidebar shows it working
// on its own, its answer lands in that conversation (under a system line, not a bubble of
// the user's), one notification carries it, and clicking it opens the conversation there.
// Then a continuation needs an approval nobody is there to give at once: the card says it
// was asked while the user was away, and the notification offers Allow once / Deny / Open.
// Allow once, picked from dunst's menu of the notification's actions, lets the command run
// (its marker file appears); Deny does not; Open brings the window to the card.
//
// dunst 1.9 shows a notification's actions in its context menu, through the program its
// `dmenu` setting names. This test runs its own dunst whose "dmenu" is a small script: it
// records the menu and picks the line the test wrote to a file, as a user picks an entry.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACTS, Harness, messages, quit, screenshot, send, By, sleep, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
let conversation = null;

const WORKSPACE = path.join(h.dataDir, 'workspace');
const ALLOWED = 'e2e-marker-allowed';
const DENIED = 'e2e-marker-denied';
const ANSWER = 'The nightly job finished: e2e-done.';
const exec = (id, command, background = false) => ({
  kind: 'tool_calls',
  calls: [{ id, name: 'exec', arguments: background ? { command, background: true } : { command } }],
});
const SCRIPT = {
  steps: [
    // The user's turn in the second conversation: a background command, then a word.
    exec('call_job', 'sleep 2; echo e2e-done', true),
    { kind: 'text', text: 'It runs in the background; I will carry on when it ends.' },
    // The continuation: slow enough for the sidebar to be seen working.
    { kind: 'text', text: ANSWER, chunk_chars: 2, delay_ms: 120 },
    // The user asks for more: another background command.
    exec('call_step1', 'sleep 1; echo step-one', true),
    { kind: 'text', text: 'Waiting for step one.' },
    // Its continuation needs an approval: Allow once from the notification.
    exec('call_touch_allowed', `touch ${ALLOWED}`),
    { kind: 'text', text: 'Created the first marker.' },
    // Once more, and this time Deny from the notification.
    exec('call_step2', 'sleep 1; echo step-two', true),
    { kind: 'text', text: 'Waiting for step two.' },
    exec('call_touch_denied', `touch ${DENIED}`),
    { kind: 'text', text: 'The second marker was denied; I left it.' },
    // A third, answered on the card that the notification's Open leads to.
    exec('call_step3', 'sleep 1; echo step-three', true),
    { kind: 'text', text: 'Waiting for step three.' },
    exec('call_touch_opened', 'touch e2e-marker-opened'),
    { kind: 'text', text: 'Left the third marker.' },
  ],
  fallback: { kind: 'text', text: 'HEARTBEAT_OK' },
};

/** The process that owns the notification service on this bus, if any. */
function notificationServerPid() {
  const out = spawnSync('dbus-send', [
    '--session', '--print-reply', '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
    'org.freedesktop.DBus.GetConnectionUnixProcessID', 'string:org.freedesktop.Notifications',
  ]).stdout.toString();
  const m = out.match(/uint32 (\d+)/);
  return m ? Number(m[1]) : null;
}

const DUNST_DIR = path.join(h.dataDir, 'dunst');
const CHOICE = path.join(DUNST_DIR, 'choice');
const MENU = path.join(DUNST_DIR, 'menu.txt');

/** Our own dunst, whose context menu picks what `CHOICE` names. Any running one (D-Bus
 *  activated by an earlier test) is stopped first, by the pid that owns the name. */
async function startDunst() {
  fs.mkdirSync(DUNST_DIR, { recursive: true });
  const pick = path.join(DUNST_DIR, 'pick.sh');
  fs.writeFileSync(pick, `#!/bin/sh\ncat > '${MENU}'\ngrep -m1 -F -- "$(cat '${CHOICE}')" '${MENU}'\n`, { mode: 0o755 });
  const rc = path.join(DUNST_DIR, 'dunstrc');
  fs.writeFileSync(rc, `[global]\n    dmenu = ${pick}\n    show_indicators = yes\n`);
  // Ours must be the one on the bus: a dunst D-Bus starts on its own (activated by a
  // notification sent meanwhile) has no menu script, and `dunstctl context` would open nothing.
  for (let attempt = 1; ; attempt++) {
    const running = notificationServerPid();
    if (running !== null) {
      process.kill(running, 'SIGTERM');
      await waitFor('the old notification server to go', async () => notificationServerPid() === null, 5000);
    }
    const ours = h.spawn('dunst', ['-config', rc]);
    await waitFor('dunst on the bus', async () => notificationServerPid() !== null, 5000);
    if (notificationServerPid() === ours.pid) return;
    ours.kill('SIGTERM');
    if (attempt === 3) throw new Error('another notification server keeps taking the bus name');
  }
}

/** Picks the entry labelled `label` of the one notification showing, from dunst's menu
 *  (`#Allow once (summary) [id,key]`: by label, as a user picks, since Vigil's keys are
 *  one-time random tokens). */
async function pickAction(label) {
  fs.rmSync(MENU, { force: true });
  fs.writeFileSync(CHOICE, `#${label} (`);
  const shown = () => fs.existsSync(MENU) && fs.readFileSync(MENU, 'utf8').includes(`#${label} (`);
  // A context request made while dunst is still laying the notification out (a loaded
  // machine) opens no menu: ask again, as a user would click again.
  for (let attempt = 1; attempt <= 3 && !shown(); attempt++) {
    execFileSync('dunstctl', ['context']);
    await waitFor('dunst to run the menu', async () => shown(), attempt === 3 ? 5000 : 2000).catch((e) => {
      if (attempt === 3) throw e;
    });
  }
  return fs.readFileSync(MENU, 'utf8');
}

before(async () => {
  fs.mkdirSync(WORKSPACE, { recursive: true });
  await startDunst();
  await h.startFakeProvider(SCRIPT);
  await h.startNotificationMonitor();
  await h.startDriver(h.providerEnv('anthropic', { VIGIL_APPROVAL_POLICY: 'ask' }));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const css = (sel) => driver.findElement(By.css(sel));
const attr = (sel, name) =>
  driver.executeScript(`const e = document.querySelector(${JSON.stringify(sel)}); return e && e.getAttribute(${JSON.stringify(name)});`);
const text = (sel) => driver.executeScript(`return document.querySelector(${JSON.stringify(sel)})?.innerText ?? null`);
const activeSession = () => attr('[data-testid="session-item"][data-active="true"]', 'data-session-id');
const item = (id) => `[data-testid="session-item"][data-session-id="${id}"]`;
const notifyCalls = (log) => log.split(/(?=method call .*member=Notify)/).filter((c) => c.includes('member=Notify'));

/** Approves the pending card in the conversation shown (the user is there for these). */
async function approveCard() {
  await waitFor('the approval card', async () => (await attr('[data-testid="approval-card"][data-state="pending"]', 'data-state')) === 'pending', 15000);
  await css('[data-testid="approval-card"][data-state="pending"] [data-testid="approval-approve"]').click();
  await waitFor('the card answered', async () => (await driver.findElements(By.css('[data-testid="approval-card"][data-state="pending"]'))).length === 0, 10000);
}

test('a background command from a second conversation continues that conversation while the user is elsewhere', async () => {
  await css('[data-testid="new-session"]').click();
  conversation = await waitFor('the new conversation', async () => {
    const id = await activeSession();
    return id && id !== 'main' ? id : null;
  }, 10000);
  await send(driver, 'run the nightly job in the background');
  await approveCard();
  await waitFor('the agent’s word', async () => (await messages(driver)).some((m) => m.text.includes('I will carry on when it ends')), 15000);

  // The user goes to another conversation; the sidebar is watched from now on.
  await css(item('main')).click();
  await waitFor('main shown', async () => (await activeSession()) === 'main', 5000);
  await driver.executeScript(`
    window.__sawUnattended = false;
    const seen = () => { if (document.querySelector(${JSON.stringify(`${item(conversation)} [data-testid="session-unattended"]`)})) window.__sawUnattended = true; };
    new MutationObserver(seen).observe(document.body, { subtree: true, childList: true });
    seen();`);
  try {
    execFileSync('dunstctl', ['close-all']);
  } catch {}

  // The command ends; the conversation's agent carries on by itself, slowly enough to see.
  await waitFor('the sidebar showing it working on its own', async () => driver.executeScript('return window.__sawUnattended'), 20000);
  await screenshot(driver, 'continuation-sidebar-working.png');
  assert.equal(await activeSession(), 'main', 'the user stays where they are');

  // One notification carries the answer's first line.
  await waitFor('the answer on D-Bus', async () => h.notificationLog().includes(ANSWER), 20000);
  const answers = notifyCalls(h.notificationLog()).filter((c) => c.includes(ANSWER));
  assert.equal(answers.length, 1, h.notificationLog());
  await waitFor('the turn over', async () => (await driver.findElements(By.css(`${item(conversation)} [data-testid="session-unattended"]`))).length === 0, 10000);
  assert.equal(await text(`${item(conversation)} [data-testid="session-continuations"]`), '1/10');
  // The continuation saw its conversation and its own exit notice.
  const continuation = h.fakeRequests().filter((r) => r.path === '/v1/messages')[2];
  const sent = JSON.stringify(continuation.body);
  assert.match(sent, /run the nightly job in the background/);
  assert.match(sent, /Exec completed \([^)]*code 0\) :: e2e-done/);

  // Clicking the notification (its default action) opens that conversation at the answer.
  execFileSync('import', ['-window', 'root', path.join(ARTIFACTS, 'continuation-notification.png')]);
  execFileSync('dunstctl', ['action', '0']);
  await waitFor('the conversation opened', async () => (await activeSession()) === conversation, 10000);
  await waitFor('the answer shown', async () => (await messages(driver)).some((m) => m.role === 'assistant' && m.text === ANSWER), 10000);
  const lines = await driver.executeScript(
    'return [...document.querySelectorAll(\'[data-testid="system-line"]\')].map((e) => e.innerText)',
  );
  assert.equal(lines.length, 1, JSON.stringify(lines));
  assert.match(lines[0], /Exec completed \(.*code 0\) :: e2e-done/);
  assert.doesNotMatch(lines[0], /reply exactly NO_REPLY/, 'the question for the model is not shown');
  const users = (await messages(driver)).filter((m) => m.role === 'user').map((m) => m.text);
  assert.deepEqual(users, ['run the nightly job in the background'], 'the notice is not shown as the user’s message');
  await screenshot(driver, 'continuation-opened.png');
});

/** Waits for the next approval notification after `from` in the D-Bus log; returns its Notify call. */
async function approvalNotification(from) {
  return waitFor('the approval notification', async () => notifyCalls(h.notificationLog().slice(from)).find((c) => c.includes('Vigil needs your approval')), 20000);
}

test('an unattended approval asks by a notification whose Allow once runs the command', async () => {
  try {
    execFileSync('dunstctl', ['close-all']);
  } catch {}
  const from = h.notificationLog().length;
  await send(driver, 'when step one is done, make the first marker');
  await approveCard();
  const notify = await approvalNotification(from);
  // The actions it offers: Allow once, Deny, Open; never "always". Each but the click is sent
  // under a fresh random key (32 hex digits), so no other program can name it.
  for (const label of ['Allow once', 'Deny', 'Open']) {
    assert.match(notify, new RegExp(`string "[0-9a-f]{32}"\\s+string "${label}"`), notify);
  }
  assert.ok(!/always/i.test(notify), notify);
  assert.ok(!/"(allow-once|deny|open)"/.test(notify), notify);

  // The card in the conversation says it was asked while the user was away.
  await waitFor('the card', async () => (await attr('[data-testid="approval-card"][data-state="pending"]', 'data-state')) === 'pending', 10000);
  const away = await text('[data-testid="approval-card"][data-state="pending"] [data-testid="approval-away"]');
  assert.match(away ?? '', /^Asked while you were away.*Unanswered, it is denied at .+ \(in (59 min|1 h)\)\.$/);
  await screenshot(driver, 'continuation-approval-card.png');
  execFileSync('import', ['-window', 'root', path.join(ARTIFACTS, 'continuation-approval-notification.png')]);

  const menu = await pickAction('Allow once');
  assert.match(menu, /#Allow once \(Vigil needs your approval\)/);
  assert.match(menu, /#Deny \(Vigil needs your approval\)/);
  assert.match(menu, /#Open \(Vigil needs your approval\)/);
  const marker = path.join(WORKSPACE, ALLOWED);
  await waitFor('the marker the approved command makes', async () => fs.existsSync(marker), 15000);
  await waitFor('the card answered from the notification', async () =>
    (await driver.findElements(By.css('[data-testid="approval-card"][data-state="pending"]'))).length === 0, 10000);
  const records = await driver.executeScript('return [...document.querySelectorAll(\'[data-testid="approval-card"]\')].map((e) => e.dataset.state)');
  assert.equal(records.at(-1), 'approved', JSON.stringify(records));
  await waitFor('the continuation’s answer', async () => (await messages(driver)).some((m) => m.text === 'Created the first marker.'), 15000);
});

test('Deny from the notification does not run the command, and the run goes on without it', async () => {
  try {
    execFileSync('dunstctl', ['close-all']);
  } catch {}
  const from = h.notificationLog().length;
  await send(driver, 'when step two is done, make the second marker');
  await approveCard();
  await approvalNotification(from);
  await pickAction('Deny');
  await waitFor('the continuation going on without it', async () =>
    (await messages(driver)).some((m) => m.text === 'The second marker was denied; I left it.'), 15000);
  const records = await driver.executeScript('return [...document.querySelectorAll(\'[data-testid="approval-card"]\')].map((e) => e.dataset.state)');
  assert.equal(records.at(-1), 'denied', JSON.stringify(records));
  // What the model was told: the user denied it.
  const last = JSON.stringify(h.fakeRequests().filter((r) => r.path === '/v1/messages').at(-1).body);
  assert.match(last, /The user denied/);
  await sleep(500);
  assert.ok(!fs.existsSync(path.join(WORKSPACE, DENIED)), 'the denied command did not run');
});

test('Open on the notification shows the waiting card in its conversation, from wherever the user is', async () => {
  try {
    execFileSync('dunstctl', ['close-all']);
  } catch {}
  const from = h.notificationLog().length;
  await send(driver, 'when step three is done, make the third marker');
  await approveCard();
  await waitFor('the agent waiting', async () => (await messages(driver)).some((m) => m.text === 'Waiting for step three.'), 15000);
  await css(item('main')).click();
  await waitFor('main shown', async () => (await activeSession()) === 'main', 5000);
  await approvalNotification(from);
  await pickAction('Open');
  await waitFor('the conversation opened at its card', async () => (await activeSession()) === conversation, 10000);
  await waitFor('the card holding the focus', async () =>
    driver.executeScript('return document.activeElement?.closest(\'[data-testid="approval-card"]\')?.dataset.state === "pending"'), 10000);
  // Opening answers nothing: the card still asks; here the user denies it.
  await css('[data-testid="approval-card"][data-state="pending"] [data-testid="approval-deny"]').click();
  await waitFor('the continuation going on', async () => (await messages(driver)).some((m) => m.text === 'Left the third marker.'), 15000);
  assert.ok(!fs.existsSync(path.join(WORKSPACE, 'e2e-marker-opened')));
});
