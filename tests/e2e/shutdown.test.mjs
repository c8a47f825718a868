// Graceful shutdown of the real app (issue 8, part 3): quitting while a reply streams and a
// command runs in a terminal (the quit prompt's "kill them and quit", which tray Quit leads
// to) cancels the turn, keeps what was said, kills the process group and flushes the log;
// the next start shows the conversation as it was left and carries on. Ctrl+C in the
// terminal Vigil was started from (SIGINT) goes the same way.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, alive, appPids, quit, messages, send, By, waitFor, sleep } from './harness.mjs';

const h = new Harness();
let driver;
const LONG = 'Counting the files in your projects, one folder at a time. '.repeat(60);
const pidFile = () => path.join(h.dataDir, 'sleeper.pid');

before(async () => {
  await h.startFakeProvider({
    steps: [{ kind: 'text', text: LONG, chunk_chars: 6, delay_ms: 40 }],
    fallback: { kind: 'echo' },
  });
  await h.startDriver(h.providerEnv('anthropic'));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

/** Starts a command in a terminal of its own from the Processes panel (left open) and
 *  resolves to its pid: its process group must not outlive the app. */
async function startSleeper() {
  fs.rmSync(pidFile(), { force: true });
  await driver.findElement(By.css('[data-testid="processes-toggle"]')).click();
  const input = await waitFor('the command box', async () => (await driver.findElements(By.css('[data-testid="process-command-input"]')))[0]);
  await input.sendKeys(`echo $$ > ${pidFile()}; sleep 300`, '\uE007');
  await waitFor('the pid file', async () => fs.existsSync(pidFile()) && fs.readFileSync(pidFile(), 'utf8').trim() !== '', 10000);
  const sleeper = Number(fs.readFileSync(pidFile(), 'utf8').trim());
  assert.ok(alive(sleeper));
  return sleeper;
}


test('quitting mid-reply with a command running cancels cleanly, and the next start resumes', async () => {
  const sleeper = await startSleeper();
  await driver.findElement(By.css('[data-testid="processes-close"]')).click();

  await send(driver, 'count the files in my projects');
  await waitFor('the reply streaming', async () => (await messages(driver)).some((m) => m.streaming && m.text.length > 60), 15000, 20);

  // What "Kill them and quit" in the quit prompt sends (tray Quit leads there while
  // processes run). The window goes with the app, so the call may not answer.
  await driver.executeScript('window.__TAURI_INTERNALS__.invoke("quit"); return true;').catch(() => {});
  await waitFor('the app to exit', async () => appPids().length === 0, 15000);
  await waitFor('the process group killed', async () => !alive(sleeper), 5000);
  await quit(driver);
  driver = null;

  // On disk: whole lines only, the question and the partial reply kept.
  const transcript = fs.readFileSync(path.join(h.dataDir, 'sessions', 'main.jsonl'), 'utf8');
  assert.ok(transcript.endsWith('\n'), 'no torn last line');
  const lines = transcript.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.some((m) => m.role === 'user' && JSON.stringify(m).includes('count the files in my projects')));
  const partial = lines.findLast((m) => m.role === 'assistant');
  assert.ok(partial, 'the partial reply is saved');
  const partialText = partial.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  assert.ok(partialText.length > 0 && partialText.length < LONG.length, `a part of the reply (${partialText.length} chars)`);
  assert.ok(!fs.readdirSync(path.join(h.dataDir, 'sessions')).some((f) => f.endsWith('.torn')), 'nothing to repair');
  const logs = fs.readdirSync(path.join(h.dataDir, 'logs')).map((f) => fs.readFileSync(path.join(h.dataDir, 'logs', f), 'utf8')).join('');
  assert.match(logs, /quitting at the user's request/, 'the log was flushed to the end');

  // The next start: the conversation as it was left, and it carries on.
  [driver] = await h.launchApp();
  const shown = await messages(driver);
  assert.ok(shown.some((m) => m.role === 'user' && m.text.includes('count the files')));
  const last = shown.at(-1);
  assert.equal(last.role, 'assistant');
  assert.ok(!last.streaming && last.text.startsWith('Counting the files'), 'the partial reply, no longer streaming');
  await send(driver, 'are you still there?');
  await waitFor('the echo after the restart', async () => (await messages(driver)).at(-1)?.text === 'echo: are you still there?', 20000);
  await sleep(100);
});

test('Ctrl+C where Vigil was started (SIGINT) shuts down like Quit: no command outlives it', async () => {
  const sleeper = await startSleeper();

  const pids = appPids();
  assert.equal(pids.length, 1, `one Vigil running: ${pids}`);
  process.kill(Number(pids[0]), 'SIGINT');
  const readLogs = () =>
    fs.readdirSync(path.join(h.dataDir, 'logs')).map((f) => fs.readFileSync(path.join(h.dataDir, 'logs', f), 'utf8')).join('');
  try {
    await waitFor('the app to exit', async () => appPids().length === 0, 15000);
  } catch (e) {
    // What the shutdown was doing, for the report.
    throw new Error(`${e.message}; still running: ${appPids()}; the log ends:\n${readLogs().split('\n').slice(-25).join('\n')}`);
  }
  await waitFor('the process group killed', async () => !alive(sleeper), 5000);
  await quit(driver).catch(() => {});
  driver = null;
  const logs = readLogs();
  assert.match(logs, /SIGINT: quitting/);
  assert.match(logs, /shut down; exiting/, 'the shutdown ran to its end');
});
