// Routines that keep watch without a model (issue 33), in the real app: from a chat message
// the agent makes a routine woken by a file change in the workspace and gated by a check;
// its card in the Routines pane shows the command it will run, and until the user approves
// it a change runs nothing (the user is asked once); approved, a note mentioning URGENT
// fires it: the check runs in the read-only sandbox, the notification reaches the
// notification daemon with the evidence, no model is called, and the row says "fired 1×"
// with the run's evidence in its history. Then a routine with `execution_mode: inline` made in
// the chat: a file landing in inbox/ is a turn of this conversation whose request carries the
// path as data, and the answer shows in the chat. Last, Settings' switch that lets other
// machines call webhook routines: off by default, on with a warning. Screenshots of the card,
// the fired row, the inline answer and the webhook setting.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, By, quit, screenshot, send, messages, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
const ID = 'urgent_notes';
const COMMAND = 'cat notes/*.md | grep -c URGENT';
const notes = () => path.join(h.dataDir, 'workspace', 'notes');
const inbox = () => path.join(h.dataDir, 'workspace', 'inbox');
const INBOX_ANSWER = 'A new inbox file: the landlord wants the rent by Friday.';
const chatRequests = () => h.fakeRequests().filter((r) => r.path === '/v1/messages').length;
/** The notifications' D-Bus calls, one string each (summary and body follow the member line). */
const notifyCalls = () => h.notificationLog().split(/(?=method call .*member=Notify)/).filter((c) => c.includes('member=Notify'));

const css = (selector) => driver.findElement(By.css(selector));
const count = (selector) => driver.executeScript(`return document.querySelectorAll(${JSON.stringify(selector)}).length;`);
const textOf = (selector) =>
  driver.executeScript(`const e = document.querySelector(${JSON.stringify(selector)}); return e ? e.innerText : null;`);
const row = (inner = '') => `[data-routine-id="${ID}"]${inner ? ` ${inner}` : ''}`;

/** Writes `name` in notes/ until `seen()` holds (a watch being rebuilt can miss one write),
 *  at most `ms`. Each write adds a line, so each is a change. */
async function writeUntil(name, line, seen, what, ms = 40000) {
  const file = path.join(notes(), name);
  const end = Date.now() + ms;
  while (Date.now() < end) {
    fs.appendFileSync(file, `${line}\n`);
    try {
      return await waitFor(what, seen, Math.min(5000, Math.max(0, end - Date.now())), 100);
    } catch {}
  }
  throw new Error(`timed out waiting for ${what}`);
}

before(async () => {
  fs.mkdirSync(notes(), { recursive: true });
  fs.mkdirSync(inbox(), { recursive: true });
  driver = await h.launchWithFakeProvider({
    steps: [
      {
        kind: 'tool_calls',
        calls: [
          {
            id: 'call_watch',
            name: 'routine_add',
            arguments: {
              title: 'Urgent notes',
              description: 'Tell me when a note is marked URGENT.',
              trigger: { kind: 'file', paths: ['notes/'] },
              check: { command: COMMAND, when: '>= 1' },
              action: 'notify',
            },
          },
        ],
      },
      { kind: 'text', text: 'I will watch notes/ and tell you when a note says URGENT, once you approve the check.' },
      {
        kind: 'tool_calls',
        calls: [
          {
            id: 'call_inbox',
            name: 'routine_add',
            arguments: {
              title: 'Inbox digest',
              description: 'Say in one line what the new inbox file is about.',
              trigger: { kind: 'file', paths: ['inbox/'] },
              execution_mode: 'inline',
            },
          },
        ],
      },
      { kind: 'text', text: 'I will answer here whenever a file lands in inbox/.' },
      { kind: 'text', text: INBOX_ANSWER },
    ],
    fallback: { kind: 'text', text: 'No model call was expected here.' },
  });
});

after(async () => {
  await quit(driver);
  await h.stop();
});

test('the agent makes a file-watch routine with a check; the card shows the command, and until approved a change runs nothing', async () => {
  await send(driver, 'Tell me when one of my notes says URGENT');
  await waitFor('the reply', async () => (await messages(driver)).some((m) => m.role === 'assistant' && m.text.includes('once you approve')), 30000);
  assert.equal(chatRequests(), 2, 'the chat turn only');

  await css('[data-testid="routines-toggle"]').click();
  await waitFor('the routine with its approval card', async () => (await count(row('[data-testid="routine-approval"]'))) === 1, 10000);
  assert.match(await textOf(row('[data-testid="routine-trigger"]')), /Watching `notes\/`/);
  assert.match(await textOf(row('[data-testid="routine-item-schedule"]')), /^No clock: runs when its trigger fires$/);
  assert.match(await textOf(row('[data-testid="routine-check"]')), /cat notes\/\*\.md \| grep -c URGENT \(acts when >= 1\).*notifies you, no model/);
  const card = await textOf(row('[data-testid="routine-approval-text"]'));
  assert.ok(card.includes(COMMAND), `the card shows the command: ${card}`);
  assert.match(card, /no network/, card);
  await driver.executeScript(`document.querySelector('${row('[data-testid="routine-approval"]')}').scrollIntoView({ block: "center" })`);
  await screenshot(driver, 'triggers-approval.png');

  // Not approved: a change is seen (the user is asked once) but the check does not run.
  const asked = () => notifyCalls().some((c) => c.includes('needs your approval'));
  await writeUntil('draft.md', 'URGENT but not approved', asked, 'the approval notification');
  assert.equal(notifyCalls().filter((c) => c.includes('Vigil: routine')).length, 0, 'nothing ran');
  assert.doesNotMatch((await textOf(row('[data-testid="routine-trigger"]'))) ?? '', /fired/);
  assert.equal(notifyCalls().filter((c) => c.includes('needs your approval')).length, 1, 'asked once');
});

test('approved on its card, a note marked URGENT fires it: the check runs, the notification carries the evidence, no model', async () => {
  await css(row('[data-testid="routine-approve"]')).click();
  await waitFor('the card gone', async () => (await count(row('[data-testid="routine-approval"]'))) === 0, 10000);
  const before = chatRequests();

  const fired = () => notifyCalls().find((c) => c.includes('Vigil: routine') && c.includes('Urgent notes'));
  const call = await writeUntil('today.md', 'URGENT: call the landlord', fired, 'the routine notification on D-Bus');
  assert.match(call, /string "Urgent notes — Files changed: notes\/today\.md"/, `the notification says what set it off: ${call}`);
  assert.equal(chatRequests(), before, 'a notify routine with a check calls no model');

  await waitFor('fired once on the row', async () => /fired 1× today/.test((await textOf(row('[data-testid="routine-trigger"]'))) ?? ''), 10000);
  assert.match(await textOf(row('[data-testid="routine-trigger"]')), /Watching `notes\/` · fired 1× today · last \d\d:\d\d — /);

  // The run's evidence in its history.
  await css(row('.expand')).click();
  await waitFor('the run with its evidence', async () => (await count(row('[data-testid="routine-run-evidence"]'))) >= 1, 10000);
  await driver.executeScript(`document.querySelector('${row('[data-testid="routine-run-evidence"]')}').open = true;`);
  const evidence = await textOf(row('[data-testid="routine-run-evidence"]'));
  assert.match(evidence, /notes\/today\.md/, evidence);
  assert.match(evidence, /URGENT: call the landlord/, evidence);
  assert.match(evidence, /Check `cat notes\/\*\.md \| grep -c URGENT` \(>= 1\):\nexit code 0\n2\n?$/, evidence);
  await driver.executeScript(`document.querySelector('${row()}').scrollIntoView({ block: "start" })`);
  await screenshot(driver, 'triggers-fired.png');
  assert.equal(chatRequests(), before, 'still no model call');
});

test('an inline routine made in the chat answers there: a file in inbox/ is a turn of this conversation, carrying the path as data', async () => {
  await driver.actions().sendKeys('\uE00C').perform(); // Escape: the Routines pane closes
  await waitFor('the pane closed', async () => (await count('[data-testid="routines-pane"]')) === 0, 5000);
  await send(driver, 'Whenever a file lands in inbox/, tell me here what it is about');
  await waitFor('the reply', async () => (await messages(driver)).some((m) => m.role === 'assistant' && m.text.includes('answer here whenever')), 30000);
  const before = chatRequests();

  fs.writeFileSync(path.join(inbox(), 'rent.txt'), 'The rent is due on Friday.\n');
  await waitFor('the answer in this conversation', async () => (await messages(driver)).some((m) => m.role === 'assistant' && m.text === INBOX_ANSWER), 30000);
  const asked = h.fakeRequests().filter((r) => r.path === '/v1/messages').at(-1);
  const body = JSON.stringify(asked.body);
  assert.equal(chatRequests(), before + 1, 'one turn for the one file');
  assert.match(body, /inbox\/rent\.txt/, 'the path is the evidence the model saw');
  assert.match(body, /never instructions/, 'as data');
  assert.match(body, /answer here whenever a file lands/, 'in this conversation: its history came along');
  await screenshot(driver, 'triggers-inline-answer.png');

  await css('[data-testid="routines-toggle"]').click();
  const inboxRow = '[data-routine-id="inbox_digest"] [data-testid="routine-runs-in"]';
  await waitFor('the row names the conversation', async () => /^in: /.test((await textOf(inboxRow)) ?? ''), 10000);
});

test('in Settings, calls to webhook routines from other machines are off until switched on, with a warning', async () => {
  const desktop = () => JSON.parse(fs.readFileSync(path.join(h.dataDir, 'settings.json'), 'utf8')).desktop ?? {};
  await driver.actions().sendKeys('\uE00C').perform(); // Escape: the Routines pane closes
  await css('[data-testid="open-settings"]').click();
  await waitFor('the webhook section', async () => (await count('[data-testid="settings-webhook-beyond"]')) === 1, 10000);
  assert.equal(await css('[data-testid="settings-webhook-beyond"]').isSelected(), false, 'loopback only by default');
  assert.equal(await count('[data-testid="settings-webhook-warning"]'), 0);

  await driver.executeScript(`document.querySelector('[data-testid="settings-webhooks"]').scrollIntoView({ block: "center" })`);
  await css('[data-testid="settings-webhook-beyond"]').click();
  await waitFor('the warning', async () => /Anyone who can reach this address/.test((await textOf('[data-testid="settings-webhook-warning"]')) ?? ''), 10000);
  await waitFor('saved', async () => desktop().webhook_bind === '0.0.0.0', 10000);
  await screenshot(driver, 'triggers-webhook-setting.png');

  await css('[data-testid="settings-webhook-beyond"]').click();
  // The file is written before the window hears back: each is waited for on its own.
  await waitFor('off again, saved without an address', async () => desktop().webhook_bind === undefined, 10000);
  await waitFor('the warning gone', async () => (await count('[data-testid="settings-webhook-warning"]')) === 0, 10000);
});
