// A HEARTBEAT.md replaced while a sandboxed command runs (issue 30, item 7), in the real app.
// The agent starts a long command in the background (full-auto: the sandbox of the user's
// turn, which binds HEARTBEAT.md read-only); another program then saves the file by rename,
// as an editor does, which detaches that bind in the running sandbox. The routine the new
// file carries is held: the Routines pane says why and the routine is not run (no model
// call for its job) until the user presses Trust; then it runs. Screenshot of the banner.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, By, quit, screenshot, send, messages, sleep, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
const ws = () => path.join(h.dataDir, 'workspace');
const JOB_WORDS = 'HELD-JOB-5e21: water the plants';
/** How long the held routine is watched not running; checked below against how long the
 * same routine takes to reach the provider once trusted, so the wait proves something. */
const HELD_WAIT_MS = 3000;
const jobRequests = () =>
  h.fakeRequests().filter((r) => r.path === '/v1/messages' && JSON.stringify(r.body ?? r).includes('HELD-JOB-5e21')).length;
const css = (selector) => driver.findElement(By.css(selector));
const textOf = (selector) =>
  driver.executeScript(`const e = document.querySelector(${JSON.stringify(selector)}); return e ? e.innerText : null;`);

/** A whole HEARTBEAT.md with one isolated job, due at once. */
function withRoutine() {
  const task = {
    version: 2,
    tasks: [
      {
        id: 'held_job',
        title: 'Water the plants',
        schedule: '1d',
        execution_mode: 'isolated',
        next_run_at: new Date(Date.now() - 60000).toISOString(),
        description: JOB_WORDS,
      },
    ],
  };
  return `# Checks\n\n## Tasks\n\n\`\`\`json\n${JSON.stringify(task, null, 2)}\n\`\`\`\n`;
}

before(async () => {
  fs.mkdirSync(ws(), { recursive: true });
  fs.writeFileSync(path.join(ws(), 'HEARTBEAT.md'), '# Checks\n');
  driver = await h.launchWithFakeProvider({
    steps: [
      {
        kind: 'tool_calls',
        calls: [{ id: 'call_long', name: 'exec', arguments: { command: 'sleep 120', background: true } }],
      },
      { kind: 'text', text: 'It is running in the background.' },
    ],
    fallback: { kind: 'text', text: 'The plants are watered.' },
  });
});

after(async () => {
  await quit(driver);
  await h.stop();
});

test('a HEARTBEAT.md saved by rename while a sandboxed command runs waits for Trust, then its routine runs', async () => {
  await send(driver, 'Start the long job.');
  await waitFor('the answer', async () => (await messages(driver)).some((m) => m.text.includes('running in the background')), 30000);

  // An editor's save: the whole file written beside it and renamed over it.
  const swap = path.join(ws(), '.HEARTBEAT.md.swp');
  fs.writeFileSync(swap, withRoutine());
  fs.renameSync(swap, path.join(ws(), 'HEARTBEAT.md'));

  await css('[data-testid="routines-toggle"]').click();
  const held = await waitFor('the held banner', () => textOf('[data-testid="routines-held"]'), 30000);
  assert.match(held, /HEARTBEAT\.md was replaced while a sandboxed command was running/);
  assert.match(held, /None of the routines below runs until you trust the file/);
  await waitFor('the held routine listed', () => textOf('[data-routine-id="held_job"]'), 20000);
  const file = await screenshot(driver, 'routines-held.png');
  assert.ok(fs.statSync(file).size > 10000);
  // Due since a minute ago, yet nothing runs while the file is held.
  await sleep(HELD_WAIT_MS);
  assert.equal(jobRequests(), 0, 'a held routine ran');

  await css('[data-testid="routines-held-trust"]').click();
  const trustedAt = Date.now();
  await waitFor('the banner gone', async () => (await textOf('[data-testid="routines-held"]')) === null, 20000);
  await waitFor('the trusted routine run', () => jobRequests() > 0, 60000);
  // Not running for HELD_WAIT_MS shows the hold only if, unheld, it would have run sooner.
  const tookMs = Date.now() - trustedAt;
  console.log(`trusted routine reached the provider after ${tookMs} ms`);
  assert.ok(tookMs < HELD_WAIT_MS, `once trusted it took ${tookMs} ms, longer than the ${HELD_WAIT_MS} ms it was watched held`);
});
