// Routines in the real app. Issue 6: a scripted chat makes the agent call `routine_add` for a
// reminder due in a few seconds; it fires without the model, and its text reaches the
// notification daemon and the chat. Issue 7: a routine created in the Routines pane lands in
// HEARTBEAT.md, fires, is notified, and the click leads to its card; an invalid cron is
// refused at the field and nothing is written; a result card links back to its routine, whose
// run opens its job's transcript (issue 35); the free-text checks of HEARTBEAT.md are edited in the pane without touching the routines.
// Screenshots of the pane, the editor and the checks.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Harness, By, fill as fillInput, quit, screenshot, send, messages, sleep, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
const JOB_RESULT = 'All three plants are fine; the basil needs water tomorrow.';
const heartbeatFile = () => path.join(h.dataDir, 'workspace', 'HEARTBEAT.md');
const readHeartbeat = () => (fs.existsSync(heartbeatFile()) ? fs.readFileSync(heartbeatFile(), 'utf8') : '');
const notifies = () => (h.notificationLog().match(/member=Notify/g) ?? []).length;
const chatRequests = () => h.fakeRequests().filter((r) => r.path === '/v1/messages').length;

const css = (selector) => driver.findElement(By.css(selector));
const count = (selector) => driver.executeScript(`return document.querySelectorAll(${JSON.stringify(selector)}).length;`);
const textOf = (selector) =>
  driver.executeScript(`const e = document.querySelector(${JSON.stringify(selector)}); return e ? e.innerText : null;`);
const fill = (selector, value) => fillInput(driver, selector, value);

before(async () => {
  // Every model call after the scripted chat (the isolated job's turn) answers with the result.
  driver = await h.launchWithFakeProvider({ steps: [], fallback: { kind: 'text', text: JOB_RESULT } });
});

after(async () => {
  await quit(driver);
  await h.stop();
});

test('with no routines the pane says what to do, and Escape closes it', async () => {
  await css('[data-testid="routines-toggle"]').click();
  await waitFor('the empty state', async () => /remind me/i.test((await textOf('[data-testid="routines-empty"]')) ?? ''));
  await screenshot(driver, 'routines-empty.png');
  await driver.actions().sendKeys('\uE00C').perform(); // Escape
  await waitFor('the pane closed', async () => (await count('[data-testid="routines-pane"]')) === 0, 5000);
});

test('the agent registers a reminder from the chat; it fires, notifies, and lands in the chat', async () => {
  // The time is set now, not when the provider started, so it is a few seconds ahead.
  const due = new Date(Date.now() + 6000).toISOString();
  const script = {
    steps: [
      {
        kind: 'tool_calls',
        calls: [
          {
            id: 'call_routine',
            name: 'routine_add',
            arguments: { title: 'Stretch', description: 'Stand up and stretch.', next_run_at: due, kind: 'time_reminder', timezone: 'UTC' },
          },
        ],
      },
      { kind: 'text', text: 'Done: I will remind you to stretch in a few seconds.' },
    ],
    fallback: { kind: 'text', text: JOB_RESULT },
  };
  const res = await fetch(`${h.fakeUrl}/_script`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(script) });
  assert.ok(res.ok, `the fake provider took the script (${res.status})`);
  const before = chatRequests();

  await send(driver, 'Remind me to stretch in a few seconds');
  await waitFor('the reply', async () => (await messages(driver)).some((m) => m.role === 'assistant' && m.text.includes('remind you to stretch')), 20000);
  // The routine is in the file, as the agent's (source: chat), with its zone stated.
  const file = readHeartbeat();
  assert.match(file, /"title": "Stretch"/);
  assert.match(file, /"source": "chat"/);
  assert.match(file, /"timezone": "UTC"/);

  await waitFor('the reminder on D-Bus', async () => h.notificationLog().includes('Reminder: Stretch'), 30000);
  await waitFor('the reminder card in the chat', async () => {
    const cards = await driver.executeScript(
      'return [...document.querySelectorAll(\'[data-testid="background-update"]\')].map((c) => c.innerText);',
    );
    return cards.some((c) => c.includes('Reminder: Stretch'));
  }, 10000);
  // A time_reminder runs without the model: only the two scripted chat requests were made.
  assert.equal(chatRequests() - before, 2);
});

/** The editor's Save, scrolled into view first (the editor can be taller than the pane). */
async function save() {
  await driver.executeScript('document.querySelector(\'[data-testid="routine-save"]\').scrollIntoView({ block: "center" })');
  await css('[data-testid="routine-save"]').click();
}

test('a routine made in the pane is written to HEARTBEAT.md, fires, and its notification leads to it; a bad cron saves nothing', async () => {
  await css('[data-testid="routines-toggle"]').click();
  await waitFor('the pane', async () => (await count('[data-testid="routines-pane"]')) === 1);
  await waitFor("the agent's routine in the list", async () => (await count('[data-testid="routine-item"]')) === 1);

  // An invalid cron: an error at the field, and the file is not touched.
  const untouched = readHeartbeat();
  await css('[data-testid="routine-new"]').click();
  await fill('[data-testid="routine-title"]', 'Water the plants');
  await fill('[data-testid="routine-description"]', 'Check the plants on the windowsill and tell me which need water.');
  await fill('[data-testid="routine-schedule"]', '61 25 * * *');
  await save();
  await waitFor('the inline schedule error', async () => /cron/.test((await textOf('[data-testid="routine-schedule-error"]')) ?? ''), 5000);
  const scheduleError = await textOf('[data-testid="routine-schedule-error"]');
  assert.match(scheduleError, /the minute field "61"/, 'the error names the field the user wrote');
  assert.doesNotMatch(scheduleError, /0 61 25/, "not the cron crate's internal 6-field form");
  assert.equal(await count('[data-testid="routine-editor"]'), 1, 'the editor stays open');
  assert.equal(readHeartbeat(), untouched, 'HEARTBEAT.md is unchanged');
  await screenshot(driver, 'routines-editor-error.png');

  // Every minute, isolated: the job's turn answers with JOB_RESULT.
  await fill('[data-testid="routine-schedule"]', '* * * * *');
  await css('input[name="routine-mode"][value="isolated"]').click();
  await waitFor('the live preview', async () => {
    const p = (await textOf('[data-testid="routine-preview"]')) ?? '';
    return /every minute/i.test(p) && /Next:/.test(p) && (await count('[data-testid="routine-schedule-error"]')) === 0;
  }, 5000);
  await screenshot(driver, 'routines-editor.png');
  await save();
  await waitFor('the editor closed and two routines listed', async () =>
    (await count('[data-testid="routine-editor"]')) === 0 && (await count('[data-testid="routine-item"]')) === 2, 10000);
  const file = readHeartbeat();
  assert.match(file, /"title": "Water the plants"/);
  assert.match(file, /"schedule": "\* \* \* \* \*"/);
  assert.match(file, /"execution_mode": "isolated"/);
  assert.match(file, /"source": "manual"/);
  const row = await textOf('[data-routine-id="water_the_plants"]');
  assert.match(row, /every minute/i);
  assert.match(row, /Next:/);
  await screenshot(driver, 'routines.png');

  // It fires at the next minute; the earlier reminder's notification is closed first, so the
  // click below is on this one.
  try {
    execFileSync('dunstctl', ['close-all']);
  } catch {}
  const seen = notifies();
  await waitFor("the routine's result on D-Bus", async () => notifies() > seen && h.notificationLog().includes('basil needs water'), 75000, 250);
  await waitFor('the run in the row', async () => /Done/.test((await textOf('[data-routine-id="water_the_plants"] [data-testid="routine-last-run"]')) ?? ''), 10000);
  // The newest such card: the routine runs every minute, and when it was saved just before
  // a minute turned, the run awaited above is its second; the click below is on its
  // notification.
  const eventId = await driver.executeScript(
    `const c = [...document.querySelectorAll('[data-testid="background-update"]')].filter((c) => c.innerText.includes('basil needs water')).at(-1);
     return c ? c.dataset.eventId : null;`,
  );
  assert.ok(eventId, 'the result is a card in the chat');

  // What a click does: dunst invokes the default action; the window comes forward at the card.
  execFileSync('dunstctl', ['action', '0']);
  await waitFor('the pane closed for the card', async () => (await count('[data-testid="routines-pane"]')) === 0, 10000);
  await waitFor('the card highlighted', async () =>
    driver.executeScript(`const c = document.querySelector('[data-event-id="${eventId}"]'); return !!c && c.classList.contains('highlight');`), 5000);

  // The card names its routine; its link opens the pane at that routine, history unfolded.
  const link = await driver.findElement(By.css(`[data-event-id="${eventId}"] [data-testid="background-update-routine"]`));
  assert.match(await link.getText(), /Routine: Water the plants/);
  await link.click();
  await waitFor('the pane open at the routine', async () =>
    (await driver.executeScript(`const r = document.querySelector('[data-routine-id="water_the_plants"]');
       return !!r && r.dataset.focused === 'true' && !!r.querySelector('[data-testid="routine-history"]');`)), 5000);
  assert.match(await textOf('[data-routine-id="water_the_plants"] [data-testid="routine-history"]'), /basil needs water/);
  // Its newest run opens the job's own transcript (issue 35): the job's prompt and its reply.
  await css('[data-routine-id="water_the_plants"] [data-testid="routine-run"] [data-testid="routine-run-transcript"]').click();
  await waitFor('the job transcript in the window', async () =>
    (await count('[data-testid="routines-pane"]')) === 0 &&
    (await driver.executeScript(`const m = [...document.querySelectorAll('[data-testid="message"]')].map((e) => e.innerText);
       return m.some((t) => t.includes('Scheduled routine "water_the_plants" is due')) && m.some((t) => t.includes('basil needs water'));`)), 10000);
  await screenshot(driver, 'routines-job-transcript.png');
  // Back to the conversation, whose cards the next tests count.
  await css('[data-testid="session-item"][data-session-id="main"] button.select').click();
  await waitFor('the conversation shown again', async () =>
    (await count('[data-testid="session-item"][data-session-id="main"][data-active="true"]')) === 1, 5000);
});

test("HEARTBEAT.md's checks are edited in the pane, the routines are kept, and a concurrent edit is not overwritten", async () => {
  await css('[data-testid="routines-toggle"]').click();
  await waitFor('the checks editor', async () => (await count('[data-testid="checks-text"]')) === 1, 10000);
  // Only the routines' block so far: nothing for interval heartbeats to check.
  assert.equal(await driver.executeScript('return document.querySelector(\'[data-testid="checks-status"]\').dataset.tone'), 'idle');
  assert.match(await textOf('[data-testid="checks-status"]'), /skip the model call/);

  await fill('[data-testid="checks-text"]', '# Checks\n\n- If ~/inbox has more than 10 files, tell me.\n');
  await css('[data-testid="checks-save"]').click();
  await waitFor('saved', async () => (await count('[data-testid="checks-saved"]')) === 1, 5000);
  const file = readHeartbeat();
  assert.ok(file.startsWith('# Checks\n\n- If ~/inbox has more than 10 files, tell me.\n\n## Tasks'), file);
  assert.match(file, /"title": "Water the plants"/, 'the routines are kept');
  assert.equal(await driver.executeScript('return document.querySelector(\'[data-testid="checks-status"]\').dataset.tone'), 'ok');
  await driver.executeScript('document.querySelector(\'[data-testid="checks-editor"]\').scrollIntoView()');
  await screenshot(driver, 'routines-checks.png');

  // The agent (here: another writer) changes the checks while they are open: a save is refused.
  fs.writeFileSync(heartbeatFile(), readHeartbeat().replace('10 files', '20 files'));
  await fill('[data-testid="checks-text"]', '# Checks\n\n- Mine.\n');
  await css('[data-testid="checks-save"]').click();
  await waitFor('the conflict', async () => /changed since it was opened/.test((await textOf('[data-testid="checks-error"]')) ?? ''), 5000);
  assert.match(readHeartbeat(), /20 files/, "the other writer's text is kept");
  await css('[data-testid="checks-reload"]').click();
  await waitFor('the new text loaded', async () =>
    (await driver.executeScript('return document.querySelector(\'[data-testid="checks-text"]\').value')).includes('20 files'), 5000);
  await driver.actions().sendKeys('\uE00C').perform(); // Escape
  await waitFor('the pane closed', async () => (await count('[data-testid="routines-pane"]')) === 0, 5000);
});

test('a corrupted task block is reported with a way back to the last good version', async () => {
  const good = readHeartbeat();
  fs.writeFileSync(heartbeatFile(), good.replace('```json\n{', '```json\n{ this is not JSON,'));
  await css('[data-testid="routines-toggle"]').click();
  await waitFor('the banner', async () => (await count('[data-testid="routines-corrupted"]')) === 1, 10000);
  await screenshot(driver, 'routines-corrupted.png');
  await css('[data-testid="routines-restore"]').click();
  await waitFor('the routines back', async () =>
    (await count('[data-testid="routines-corrupted"]')) === 0 && (await count('[data-testid="routine-item"]')) === 2, 10000);
  assert.match(readHeartbeat(), /"title": "Water the plants"/);
  assert.ok(fs.existsSync(`${heartbeatFile()}.corrupt`), 'the broken file is kept');
});

test('a removed routine moves to Removed and stops; it can be restored, or deleted for good', async () => {
  const inList = () => count('[data-testid="routine-item"][data-routine-id="water_the_plants"]');
  const inRemoved = () => count('[data-testid="removed-routine"][data-routine-id="water_the_plants"]');
  await css('[data-routine-id="water_the_plants"] [data-testid="routine-remove"]').click();
  await waitFor('the routine under Removed', async () => (await inList()) === 0 && (await inRemoved()) === 1, 10000);
  assert.match(readHeartbeat(), /"removed_at": "/, 'kept in HEARTBEAT.md, marked');
  assert.match(readHeartbeat(), /"title": "Water the plants"/);

  // It stops: it ran every minute until now; past the next minute's turn it has not run
  // again: no run in its history, no result card, no notification, no model call. (A run
  // under way as it was removed may finish: the count starts once that has settled.)
  const runsFile = path.join(h.dataDir, 'routines', 'runs', 'water_the_plants.jsonl');
  const runs = () => (fs.existsSync(runsFile) ? fs.readFileSync(runsFile, 'utf8').split('\n').filter(Boolean).length : 0);
  const activity = async () => ({
    runs: runs(),
    cards: await driver.executeScript(`return [...document.querySelectorAll('[data-testid="background-update"]')]
      .filter((c) => c.textContent.includes('basil needs water')).length;`),
    notifications: notifies(),
    modelCalls: chatRequests(),
  });
  await sleep(3000);
  const atRemoval = await activity();
  assert.ok(atRemoval.runs >= 1 && atRemoval.cards >= 1, `it had run before it was removed: ${JSON.stringify(atRemoval)}`);
  const nextMinute = Math.ceil((Date.now() + 1) / 60_000) * 60_000;
  await sleep(nextMinute - Date.now() + 10_000);
  assert.deepEqual(await activity(), atRemoval, 'nothing ran after the removal');

  await css('[data-testid="routines-removed"] summary').click();
  await driver.executeScript('document.querySelector(\'[data-testid="routines-removed"]\').scrollIntoView()');
  await screenshot(driver, 'routines-removed.png');

  await css('[data-routine-id="water_the_plants"] [data-testid="removed-restore"]').click();
  await waitFor('the routine back in the list', async () => (await inList()) === 1 && (await inRemoved()) === 0, 10000);
  assert.doesNotMatch(readHeartbeat(), /"removed_at"/);
  assert.match(await textOf('[data-routine-id="water_the_plants"]'), /Next:/, 'restored as it was: scheduled');

  await css('[data-routine-id="water_the_plants"] [data-testid="routine-remove"]').click();
  await waitFor('removed again', async () => (await inRemoved()) === 1, 10000);
  await css('[data-testid="routines-removed"] summary').click();
  await css('[data-routine-id="water_the_plants"] [data-testid="removed-delete"]').click();
  await css('[data-routine-id="water_the_plants"] [data-testid="removed-delete-confirm"]').click();
  await waitFor('deleted for good', async () => (await inRemoved()) === 0 && (await inList()) === 0, 10000);
  assert.doesNotMatch(readHeartbeat(), /Water the plants/);
  assert.equal(await count('[data-testid="routines-removed"]'), 0, 'nothing left under Removed');
});

test('an inline routine can wait for the next regular heartbeat instead of waking it', async () => {
  await css('[data-testid="routine-new"]').click();
  await fill('[data-testid="routine-title"]', 'Tidy the downloads');
  await fill('[data-testid="routine-description"]', 'Tell me if ~/Downloads holds more than 5 GB.');
  await fill('[data-testid="routine-schedule"]', '0 */2 * * *');
  await css('input[name="routine-mode"][value="isolated"]').click();
  assert.equal(await count('[data-testid="routine-next-heartbeat"]'), 0, 'only offered for inline routines');
  await css('input[name="routine-mode"][value="inline"]').click();
  await css('[data-testid="routine-next-heartbeat"]').click();
  await screenshot(driver, 'routines-editor-next-heartbeat.png');
  await save();
  await waitFor('the routine listed', async () => (await count('[data-routine-id="tidy_the_downloads"]')) === 1, 10000);
  assert.match(await textOf('[data-routine-id="tidy_the_downloads"] [data-testid="routine-item-schedule"]'), /with the next heartbeat/);
  assert.match(readHeartbeat(), /"wake_mode": "next_heartbeat"/);
});
