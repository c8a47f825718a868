// Background work's cost and its quiet outcomes in the real window (issue 20, items 8–10),
// in one app launch: "Check now" answers "All clear at HH:MM" when the model has nothing to
// report, with that run's tokens on the heartbeat card; a routine whose due times passed
// while Vigil was not running shows them as one `missed` record, and a run of it shows the
// tokens and cost its job used; once background work has used today's token budget the
// status bar says so, the next check is not made, and Settings → Health has the day's totals.
// The provider is the OpenAI-compatible fake, which reports cached tokens and OpenRouter's
// cost. Screenshot: the routine's history with its tokens.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, By, quit, screenshot, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
const HOUR = 3_600_000;
/** The tokens the fake reports: the check's reply and every later one (the job's). */
const CHECK_USAGE = { input_tokens: 2_400, output_tokens: 4, cached_tokens: 2_048, cost: 0.0003 };
const JOB_USAGE = { input_tokens: 3_180, output_tokens: 30, cached_tokens: 2_900, cost: 0.0004 };
/** Spent by the two runs together (2,404 + 3,210 tokens), not by the check alone. */
const BUDGET = 5_000;
const DIGEST = 'Digest: three new notes, nothing urgent.';

const iso = (ms) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
const css = (selector) => driver.findElement(By.css(selector));
const count = (selector) => driver.executeScript(`return document.querySelectorAll(${JSON.stringify(selector)}).length;`);
const textOf = (selector) =>
  driver.executeScript(`const e = document.querySelector(${JSON.stringify(selector)}); return e ? e.innerText.trim() : null;`);
const texts = (selector) =>
  driver.executeScript(`return [...document.querySelectorAll(${JSON.stringify(selector)})].map((e) => e.innerText.trim());`);
const modelRequests = () => h.fakeRequests().filter((r) => r.path === '/v1/chat/completions').length;
const notified = (words) => (h.notificationLog().match(new RegExp(words, 'g')) ?? []).length;

before(async () => {
  const now = Date.now();
  // Hourly since five and a half hours ago, last due half an hour ago: four due times passed
  // while the app was not running, and `catch_up: skip` runs none of them late.
  const created = now - 5.5 * HOUR;
  const tasks = {
    version: 2,
    tasks: [
      {
        id: 'morning_digest',
        title: 'Morning digest',
        description: 'Summarise what is new in my notes folder.',
        schedule: '1h',
        timezone: 'UTC',
        execution_mode: 'isolated',
        catch_up: 'skip',
        source: 'manual',
        enabled: true,
        state: 'pending',
        created_at: iso(created),
        last_run_at: null,
        next_run_at: iso(created + 2 * HOUR),
        timeout_seconds: 120,
      },
    ],
  };
  const workspace = path.join(h.dataDir, 'workspace');
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(
    path.join(workspace, 'HEARTBEAT.md'),
    `# Checks\n\n- Tell me if last night's backup failed.\n\n## Tasks\n\n\`\`\`json\n${JSON.stringify(tasks, null, 2)}\n\`\`\`\n`,
  );
  // No interval run during the test: only the checks and the job below call the model.
  fs.writeFileSync(path.join(h.dataDir, 'settings.json'), JSON.stringify({ heartbeat: { every: '6h', dailyTokenBudget: BUDGET } }));
  await h.startFakeProvider({
    steps: [{ kind: 'text', text: 'HEARTBEAT_OK', usage: CHECK_USAGE }],
    fallback: { kind: 'text', text: DIGEST, usage: JOB_USAGE },
  });
  await h.startNotificationMonitor();
  await h.startDriver(h.providerEnv('openai'));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

/** The heartbeat's popover, open. */
async function openHeartbeat() {
  if ((await count('[data-testid="heartbeat-details"]')) === 0) await css('[data-testid="heartbeat-status"]').click();
  await waitFor('the heartbeat popover', async () => (await count('[data-testid="heartbeat-details"]')) === 1, 5000);
}

test('Check now says "All clear at HH:MM" after HEARTBEAT_OK, and the card shows that run’s tokens', async () => {
  await openHeartbeat();
  await css('[data-testid="heartbeat-check-button"]').click();
  const result = await waitFor('the check’s answer', async () => {
    const t = await textOf('[data-testid="heartbeat-check-result"]');
    return t && t !== 'Checking…' ? t : null;
  }, 20000);
  assert.match(result, /^All clear at \d{1,2}:\d{2}( [AP]M)?$/);
  assert.equal(modelRequests(), 1, 'one model call');
  assert.equal(await textOf('[data-testid="heartbeat-last-tokens"]'), '2,404 tokens (2,048 cached) · $0.0003');
  assert.equal(
    await textOf('[data-testid="heartbeat-today"]'),
    '2,404 of 5,000 tokens (2,048 cached) · $0.0003 · 1 background run',
  );
  await driver.actions().sendKeys('\uE00C').perform(); // Escape
});

test('the routine’s history shows the due times missed while Vigil was not running, and a run’s tokens and cost', async () => {
  // The start found them and said so once.
  await waitFor('the missed-routines notification', async () => notified('missed') >= 1, 10000);
  await css('[data-testid="routines-toggle"]').click();
  const item = '[data-routine-id="morning_digest"]';
  await waitFor('the routine', async () => (await count(item)) === 1, 10000);
  await css(`${item} [data-testid="routine-run-now"]`).click();
  await waitFor('the job’s result', async () => h.notificationLog().includes('Digest: three new notes'), 30000);
  await css(`${item} button[aria-controls]`).click();
  const rows = `${item} [data-testid="routine-run"]`;
  await waitFor('two runs in the history', async () => (await count(rows)) === 2, 10000);
  const outcomes = await driver.executeScript(
    `return [...document.querySelectorAll(${JSON.stringify(rows)})].map((r) => r.dataset.outcome);`,
  );
  assert.deepEqual(outcomes, ['ok', 'missed'], 'newest first');
  const [ran, missed] = await texts(rows);
  assert.match(missed, /Missed/);
  assert.match(missed, /4 due times/);
  assert.match(missed, /not run \(catch-up: skip\)/);
  assert.deepEqual(await texts(`${item} [data-testid="routine-run-tokens"]`), ['3,210 tokens (2,900 cached) · $0.0004'], 'only the run used tokens');
  assert.match(ran, /Digest: three new notes/);
  const file = await screenshot(driver, 'background-routine-history.png');
  assert.ok(fs.statSync(file).size > 10_000, file);
  await driver.actions().sendKeys('\uE00C').perform();
});

test('with today’s token budget spent the status bar says so and the next check is not made', async () => {
  await openHeartbeat();
  const earlier = await textOf('[data-testid="heartbeat-check-result"]');
  await css('[data-testid="heartbeat-check-button"]').click();
  // Two manual checks run at least 30 s apart (the wake loop's spacing): "Checking…" until then.
  const result = await waitFor('the check’s answer', async () => {
    const t = await textOf('[data-testid="heartbeat-check-result"]');
    return t && t !== earlier && t !== 'Checking…' ? t : null;
  }, 45000);
  assert.match(result, /^Not checked at \d{1,2}:\d{2}( [AP]M)?: today’s token budget for background work is spent$/);
  await waitFor('the budget notice in the status bar', async () => /budget spent today/.test((await textOf('[data-testid="heartbeat-status"]')) ?? ''), 10000);
  assert.equal(await textOf('[data-testid="heartbeat-status"]'), 'Heartbeat: budget spent today · resumes tomorrow');
  assert.equal(modelRequests(), 2, 'the check and the job; the spent budget made no third call');
  assert.equal(notified('background budget spent'), 1, 'one notification');
  await driver.actions().sendKeys('\uE00C').perform();

  // Settings → Health has the day's totals with the cached part and the cost.
  await css('[data-testid="open-settings"]').click();
  const section = await css('[data-testid="settings-health"]');
  await driver.executeScript('arguments[0].scrollIntoView({ block: "end" })', section);
  const heartbeat = await waitFor('the health rows', async () => textOf('[data-testid="health-row"][data-key="heartbeat"] dd'), 10000);
  assert.match(
    heartbeat,
    /5,614 tokens today \(5,580 in, 4,948 of them cached, 34 out · \$0\.0007; 2 background runs\): the daily budget of 5,000 is spent/,
  );
  assert.match(await textOf('[data-testid="health-row"][data-key="wakes"] dd'), /^2 requested \(manual 2\)/);
  assert.match(await textOf('[data-testid="health-row"][data-key="runs"] dd'), /^1 run · last \d/);
});
