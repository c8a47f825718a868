// Real terminals through the real window: the agent's command waits for approval, runs in
// the background, shows live in the Processes panel, takes what the user types there, and
// when it exits the conversation carries on by itself (issue 19: a continuation) and its
// answer reaches the desktop as one notification and the chat as the agent's reply, after
// the exit notice's system line.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Harness, quit, screenshot, send, By, waitFor } from './harness.mjs';

const h = new Harness();
let driver;

const COMMAND = 'for i in 1 2 3; do echo tick $i; sleep 0.3; done; read line; echo got:$line';
const SCRIPT = {
  steps: [
    { kind: 'tool_calls', calls: [{ id: 'call_x', name: 'exec', arguments: { command: COMMAND, background: true } }] },
    { kind: 'text', text: 'It is running in the background.' },
    { kind: 'text', text: 'Your command finished and printed got:hello.' },
  ],
  fallback: { kind: 'text', text: 'HEARTBEAT_OK' },
};

before(async () => {
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
const terminalText = (id) => driver.executeScript('return window.__vigilTerminalText ? window.__vigilTerminalText(arguments[0]) : ""', id);

test('an approved background command runs live in the panel, takes input, and its exit is reported once', async () => {
  await send(driver, 'run the ticker in the background');
  await waitFor('the approval card', async () => (await attr('[data-testid="approval-card"]', 'data-state')) === 'pending', 15000);
  assert.match(await driver.executeScript('return document.querySelector(\'[data-testid="approval-card"]\').innerText'), /tick/);
  await css('[data-testid="approval-approve"]').click();
  await waitFor('the exec tool card', async () => (await attr('[data-testid="tool-card"][data-tool-name="exec"]', 'data-status')) === 'done', 15000);

  await css('[data-testid="processes-toggle"]').click();
  const id = await waitFor('a running process', async () => attr('[data-testid="process-item"][data-state="running"]', 'data-process-id'), 10000);
  await css(`[data-testid="process-item"][data-process-id="${id}"]`).click();
  await waitFor('live output in the terminal', async () => (await terminalText(id)).includes('tick 3'), 10000);
  // Each fact once: the row names the command; the terminal's bar adds only the pid and Kill.
  const bar = await driver.executeScript('return document.querySelector(\'[data-testid="process-terminal-bar"]\').innerText');
  assert.match(bar.trim(), /^pid \d+\s+Kill$/, bar);
  await screenshot(driver, 'processes.png');

  // Type into the terminal: the process reads the line.
  const input = await driver.findElement(By.css('[data-testid="process-terminal"] textarea'));
  await input.sendKeys('hello', '\uE007');
  await waitFor('the process to echo', async () => (await terminalText(id)).includes('got:hello'), 10000);
  await waitFor('the process to be finished', async () => (await attr(`[data-testid="process-item"][data-process-id="${id}"]`, 'data-state')) === 'exited', 10000);

  // The conversation continues by itself: one notification, the answer in the chat after
  // the exit notice's system line.
  await waitFor('the answer on D-Bus', async () => h.notificationLog().includes('got:hello'), 15000);
  const notifies = (h.notificationLog().match(/member=Notify/g) ?? []).length;
  assert.equal(notifies, 1, h.notificationLog());
  await css('[data-testid="processes-toggle"]').click().catch(() => {});
  await waitFor('the continuation in the chat', async () => {
    const text = await driver.executeScript('return document.querySelector(\'[data-testid="chat"], main\')?.innerText ?? ""');
    return text.includes('Your command finished and printed got:hello.');
  }, 10000);
  const lines = await driver.executeScript(
    'return [...document.querySelectorAll(\'[data-testid="system-line"]\')].map((e) => e.innerText).join("\\n")',
  );
  assert.match(lines, /Exec completed \([0-9a-f]+, code 0\) :: .*got:hello/, 'the exit notice is a system line');
  await screenshot(driver, 'continuation-in-chat.png');
});

test("a command run from the panel is announced when it ends, and the notification's click opens its terminal", async () => {
  await css('[data-testid="processes-toggle"]').click();
  await waitFor('the panel', async () => (await driver.findElements(By.css('[data-testid="processes-panel"]'))).length === 1, 5000);
  // Earlier notifications closed, so the click below is on this one.
  try {
    execFileSync('dunstctl', ['close-all']);
  } catch {}
  const before = h.notificationLog().length;
  const input = await css('[data-testid="process-command-input"]');
  await input.sendKeys('sleep 1; echo panel-done', '\uE007');
  await waitFor('the exit on D-Bus', async () => h.notificationLog().slice(before).includes('A background command finished'), 15000);
  const id = await waitFor('the finished process', async () =>
    driver.executeScript(`const items = [...document.querySelectorAll('[data-testid="process-item"]')];
      const p = items.find((e) => e.innerText.includes('panel-done')); return p ? p.dataset.processId : null;`), 5000);
  // The user moved on: the panel is closed when the notification is clicked.
  await css('[data-testid="processes-close"]').click();
  await waitFor('the panel closed', async () => (await driver.findElements(By.css('[data-testid="processes-panel"]'))).length === 0, 5000);

  execFileSync('dunstctl', ['action', '0']);
  await waitFor('the panel open at that process', async () =>
    (await attr(`[data-testid="process-item"][data-process-id="${id}"]`, 'aria-current')) === 'true', 10000);
  await waitFor('its output in the terminal', async () => (await terminalText(id)).includes('panel-done'), 10000);
});

test("a command from the panel does not inherit the app's own drawing setting", async () => {
  // Vigil sets WEBKIT_DISABLE_COMPOSITING_MODE for its window (src-tauri, software_drawing);
  // the user's commands must run as in their own terminal.
  if ((await driver.findElements(By.css('[data-testid="processes-panel"]'))).length === 0) {
    await css('[data-testid="processes-toggle"]').click();
  }
  const input = await waitFor('the command box', async () => (await driver.findElements(By.css('[data-testid="process-command-input"]')))[0], 5000);
  await input.sendKeys('echo "compositing=${WEBKIT_DISABLE_COMPOSITING_MODE:-unset} marker=${VIGIL_APP_ADDED_ENV:-unset}"', '\uE007');
  const id = await waitFor('the process', async () =>
    driver.executeScript(`const items = [...document.querySelectorAll('[data-testid="process-item"]')];
      const p = items.find((e) => e.innerText.includes('compositing=')); return p ? p.dataset.processId : null;`), 5000);
  await waitFor('its output', async () => (await terminalText(id)).includes('compositing=unset marker=unset'), 10000);
});
