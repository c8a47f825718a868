// The app's life around its window, on the real built app under Xvfb: a second launch
// brings the running window forward instead of starting again; closing the window keeps
// Vigil and its processes running in the tray; quitting while a process runs asks first
// (Cancel keeps everything, Confirm kills the process and exits); the desktop preferences
// (close to tray, start at login, theme, notification kinds) are saved, applied at once and
// survive a restart; a chosen workspace folder is checked and used from the next start.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { APP, Harness, alive, appPids, fill, quit, screenshot, By, waitFor, sleep } from './harness.mjs';

const h = new Harness();
let driver;
let env;
const home = path.join(h.dataDir, 'home');
const ticks = path.join(h.dataDir, 'ticks');
const pidFile = path.join(h.dataDir, 'ticker.pid');
const COMMAND = `echo $$ > ${pidFile}; while true; do echo x >> ${ticks}; sleep 0.2; done`;
const WM_CLOSE = path.join(import.meta.dirname, 'wm-close.py');

before(async () => {
  fs.mkdirSync(home, { recursive: true });
  await h.startFakeProvider({ steps: [], fallback: { kind: 'text', text: 'HEARTBEAT_OK' } });
  // A home of its own: "start at login" writes ~/.config/autostart/Vigil.desktop.
  env = h.providerEnv('anthropic', { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config') });
  await h.startDriver(env);
  [driver] = await h.launchApp();
});

after(async () => {
  fs.rmSync(workspace, { recursive: true, force: true });
  await quit(driver);
  await h.stop();
});

const css = (sel) => driver.findElement(By.css(sel));
const exists = async (sel) => (await driver.findElements(By.css(sel))).length > 0;
const byId = (id) => css(`[data-testid="${id}"]`);
const innerText = (el) => driver.executeScript('return arguments[0].innerText', el);
const visibleWindows = () => {
  const r = spawnSync('xdotool', ['search', '--onlyvisible', '--name', '^Vigil$']);
  return r.stdout.toString().trim().split('\n').filter(Boolean);
};
const focusedWindow = () => spawnSync('xdotool', ['getwindowfocus']).stdout.toString().trim();
const closeWindow = () => execFileSync('python3', [WM_CLOSE, 'Vigil']);
const tickCount = () => (fs.existsSync(ticks) ? fs.readFileSync(ticks, 'utf8').length : 0);

async function grows(what) {
  const before = tickCount();
  await waitFor(what, async () => tickCount() > before + 4, 10000);
}

// Outside the data folder: a workspace inside it (other than the default) is refused.
const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-e2e-workspace-'));
const savedDesktop = () => JSON.parse(fs.readFileSync(path.join(h.dataDir, 'settings.json'), 'utf8')).desktop;
const fillInput = (selector, value) => fill(driver, selector, value);

async function openSettings() {
  await byId('open-settings').click();
  await waitFor('the desktop section', () => exists('[data-testid="settings-desktop"] [data-testid="settings-theme"]'));
}

async function closeSettings() {
  await driver.executeScript('document.querySelector(\'[data-testid="settings-close"]\').click()');
  await waitFor('the settings to close', async () => !(await exists('[data-testid="settings-panel"]')));
}

test('closing the window keeps Vigil and its processes running; a second launch brings it back', async () => {
  assert.equal(appPids().length, 1);
  await byId('processes-toggle').click();
  const input = await byId('process-command-input');
  await input.sendKeys(COMMAND, '\uE007');
  await waitFor('the ticker to run', async () => tickCount() > 0, 10000);
  assert.equal(visibleWindows().length, 1);

  closeWindow();
  await waitFor('the window to hide', async () => visibleWindows().length === 0, 5000);
  assert.equal(appPids().length, 1, 'still running in the tray');
  await grows('the process to keep running while the window is closed');

  // A second launch hands over to the running instance and exits at once.
  const started = Date.now();
  const second = spawnSync(APP, [], { env: { ...process.env, ...env }, timeout: 20000 });
  assert.equal(second.status, 0, second.stderr?.toString());
  const handOverMs = Date.now() - started;
  await waitFor('the window to come back', async () => visibleWindows().length === 1, 5000);
  assert.equal(appPids().length, 1, 'no second instance');
  const [win] = visibleWindows();
  await waitFor('the window to have the focus', async () => focusedWindow() === win, 5000);
  console.log(`second launch handed over and exited in ${handOverMs} ms`);
  await grows('the process still running');
});

test('the desktop preferences apply at once: theme, start at login, close to tray', async () => {
  await openSettings();
  assert.equal(await (await byId('settings-close-to-tray')).isSelected(), true, 'close to tray is on by default');
  assert.equal(await (await byId('settings-start-at-login')).isSelected(), false);
  assert.equal(await (await byId('settings-theme')).getAttribute('value'), 'system');

  await css('[data-testid="settings-theme"] option[value="dark"]').click();
  await waitFor('the dark theme', async () => (await driver.executeScript('return document.documentElement.dataset.theme')) === 'dark');
  const surface = await driver.executeScript('return getComputedStyle(document.body).backgroundColor');
  assert.equal(surface, 'rgb(21, 22, 24)', 'dark colours');

  await byId('settings-start-at-login').click();
  const entry = path.join(home, '.config', 'autostart', 'Vigil.desktop');
  await waitFor('the login item', async () => fs.existsSync(entry), 5000);
  assert.match(fs.readFileSync(entry, 'utf8'), /Exec=.*vigil --background/);

  await byId('settings-close-to-tray').click();
  await waitFor('the saved preferences', async () => {
    const saved = JSON.parse(fs.readFileSync(path.join(h.dataDir, 'settings.json'), 'utf8')).desktop;
    return saved?.close_to_tray === false && saved.theme === 'dark' && saved.start_at_login === true;
  });
  assert.equal(await exists('[data-testid="settings-desktop-error"]'), false);

  // Notification kinds: routines' results off (their cards still land in the chat).
  await byId('settings-notify-routines').click();
  await waitFor('the saved switch', async () => savedDesktop()?.notifications?.routines === false);
  assert.equal(savedDesktop().notifications.processes, true);

  // The workspace folder: a relative path is refused at the field and nothing is saved…
  await fillInput('[data-testid="settings-workspace-input"]', 'notes');
  await byId('settings-workspace-save').click();
  await waitFor('the field error', async () =>
    /not a full path/.test(await innerText(await byId('settings-workspace-error'))), 5000);
  assert.equal(savedDesktop().workspace ?? null, null);
  // …so is the data folder, or a folder inside it: the agent would reach Vigil's own files…
  const insideData = path.join(h.dataDir, 'inside');
  fs.mkdirSync(insideData, { recursive: true });
  for (const refused of [h.dataDir, insideData]) {
    await fillInput('[data-testid="settings-workspace-input"]', refused);
    await byId('settings-workspace-save').click();
    await waitFor(`the field error for ${refused}`, async () =>
      /holds Vigil's own data folder/.test(await innerText(await byId('settings-workspace-error'))), 5000);
    assert.equal(savedDesktop().workspace ?? null, null);
  }
  // …a real folder is saved, and applies from the next start (checked after the restart).
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(path.join(workspace, 'HEARTBEAT.md'), '# Mine\n\n- Is the cactus dry?\n');
  await fillInput('[data-testid="settings-workspace-input"]', workspace);
  await byId('settings-workspace-save').click();
  await waitFor('the saved folder', async () => savedDesktop()?.workspace === workspace, 5000);
  assert.match(await innerText(await byId('settings-workspace-hint')), /applies the next time Vigil starts/);
  await driver.executeScript('document.querySelector(\'[data-testid="settings-desktop"]\').scrollIntoView()');
  await sleep(200);
  await screenshot(driver, 'settings-desktop.png');
  await closeSettings();
});

test('quitting while a process runs asks first: Cancel keeps it, Confirm kills it and exits', async () => {
  const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  assert.ok(alive(pid));
  // Close to tray is off now: the close button quits, and asks because a process runs.
  closeWindow();
  await waitFor('the quit prompt', () => exists('[data-testid="quit-prompt"]'), 5000);
  assert.equal(await innerText(await byId('quit-title')), '1 process is running');
  assert.match(await innerText(await byId('quit-commands')), /while true/);
  await screenshot(driver, 'quit-prompt.png');
  await byId('quit-cancel').click();
  await waitFor('the prompt to go', async () => !(await exists('[data-testid="quit-prompt"]')));
  assert.equal(appPids().length, 1);
  assert.equal(visibleWindows().length, 1, 'the window stays');
  await grows('the process to keep running after Cancel');

  closeWindow();
  await waitFor('the quit prompt again', () => exists('[data-testid="quit-prompt"]'), 5000);
  await byId('quit-confirm').click().catch(() => {});
  await waitFor('the app to exit', async () => appPids().length === 0, 15000);
  await waitFor('the process to be killed', async () => !alive(pid), 5000);
  const after = tickCount();
  await sleep(600);
  assert.equal(tickCount(), after, 'no orphan keeps writing');
  assert.ok(fs.existsSync(path.join(h.dataDir, 'window-state.json')), 'the window size and position are kept');
  await quit(driver);
  driver = null;
});

test('the preferences survive a restart, and with nothing running closing quits at once', async () => {
  [driver] = await h.launchApp();
  assert.equal(await driver.executeScript('return document.documentElement.dataset.theme'), 'dark');
  await openSettings();
  assert.equal(await (await byId('settings-close-to-tray')).isSelected(), false);
  assert.equal(await (await byId('settings-start-at-login')).isSelected(), true);
  assert.equal(await (await byId('settings-theme')).getAttribute('value'), 'dark');
  assert.equal(await (await byId('settings-notify-routines')).isSelected(), false);
  // The chosen workspace is the one in use now: its HEARTBEAT.md is the one the pane edits.
  assert.match(await innerText(await byId('settings-workspace-hint')), new RegExp(`In use now:\\s*${workspace}`));
  assert.doesNotMatch(await innerText(await byId('settings-workspace-hint')), /next time/);
  await closeSettings();
  await byId('routines-toggle').click();
  await waitFor("the chosen folder's checks", async () =>
    ((await driver.executeScript('const t = document.querySelector(\'[data-testid="checks-text"]\'); return t ? t.value : ""')) ?? '').includes('Is the cactus dry?'), 10000);
  await driver.actions().sendKeys('\uE00C').perform(); // Escape
  await waitFor('the pane closed', async () => !(await exists('[data-testid="routines-pane"]')));
  await openSettings();
  // Leave the login items as they were.
  await byId('settings-start-at-login').click();
  await waitFor('the login item to go', async () => !fs.existsSync(path.join(home, '.config', 'autostart', 'Vigil.desktop')), 5000);
  await closeSettings();

  closeWindow();
  await waitFor('the app to exit without asking', async () => appPids().length === 0, 15000);
  const logs = fs.readdirSync(path.join(h.dataDir, 'logs'));
  assert.ok(logs.some((f) => /^vigil\..*\.log$/.test(f)), `a log file: ${logs}`);
  const logText = logs.map((f) => fs.readFileSync(path.join(h.dataDir, 'logs', f), 'utf8')).join('');
  assert.match(logText, /Vigil started/);
  assert.match(logText, /a second launch was redirected/);
  assert.ok(!logText.includes('sk-e2e'), 'no API key in the log');
  await quit(driver);
  driver = null;
});
