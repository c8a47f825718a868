// The tray, as a desktop panel sees it. Xvfb has no panel, so a StatusNotifierWatcher
// (sni-watcher.py) stands in; Vigil's icon registers with it, and the test reads and clicks
// the menu over D-Bus (com.canonical.dbusmenu) as a panel would. The menu lists what runs and
// the next routine; "Pause background activity" pauses the heartbeat and routines; Quit
// with a process running asks in the window, and confirming shuts down cleanly.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, alive, appPids, quit, By, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
let item = null;
const pidFile = path.join(h.dataDir, 'sleeper.pid');

before(async () => {
  await h.startFakeProvider({ steps: [], fallback: { kind: 'text', text: 'HEARTBEAT_OK' } });
  const watcher = h.spawn('/usr/bin/python3', [path.join(import.meta.dirname, 'sni-watcher.py')]);
  let out = '';
  watcher.stdout.on('data', (d) => {
    out += d;
    const m = out.match(/registered (\S+) (\S+)/);
    if (m) item = { name: m[1], path: m[2] };
  });
  await waitFor('the watcher', async () => out.includes('watching'), 10000);
  await h.startDriver(h.providerEnv('anthropic'));
  [driver] = await h.launchApp();
  await waitFor('the tray icon to register', async () => item !== null, 15000);
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const gdbus = (dest, objectPath, method, ...args) =>
  execFileSync('gdbus', ['call', '--session', '--dest', dest, '--object-path', objectPath, '--method', method, '--', ...args]).toString();

/** The menu as a panel gets it: [{ id, label, checked }]. */
function menu() {
  const ref = gdbus(item.name, item.path, 'org.freedesktop.DBus.Properties.Get', 'org.kde.StatusNotifierItem', 'Menu');
  const menuPath = ref.match(/'(\/[^']*)'/)[1];
  const layout = gdbus(item.name, menuPath, 'com.canonical.dbusmenu.GetLayout', '0', '-1', '@as []');
  return [...layout.matchAll(/\((\d+), \{([^}]*)\}, @av \[\]\)/g)].map(([, id, props]) => ({
    id: Number(id),
    menuPath,
    label: props.match(/'label': <'((?:[^'\\]|\\.)*)'>/)?.[1] ?? null,
    checked: props.match(/'toggle-state': <(\d)>/)?.[1] === '1',
  }));
}

/** Clicks `entry` as a panel does: by the id the panel was shown, which may be a while ago. */
function clickEntry(entry) {
  gdbus(item.name, entry.menuPath, 'com.canonical.dbusmenu.Event', String(entry.id), 'clicked', '<0>', '0');
}

/** Clicks the entry labelled `label` in the menu as it is now. */
function click(label) {
  const entry = menu().find((e) => e.label === label);
  assert.ok(entry, `a menu entry "${label}" in ${JSON.stringify(menu().map((e) => e.label))}`);
  clickEntry(entry);
}

const labels = () => menu().map((e) => e.label).filter(Boolean);

test('the tray menu shows what runs and what is next, and pauses background activity', async () => {
  assert.deepEqual(labels(), ['No processes running', 'No routines', 'Pause background activity', 'Open Vigil', 'Quit']);
  // The menu as a panel showed it before anything changed: its entries keep their ids while
  // the menu follows, so a click sent to what the panel showed is never lost.
  const shown = menu();
  const pauseShown = shown.find((e) => e.label === 'Pause background activity');

  await driver.findElement(By.css('[data-testid="processes-toggle"]')).click();
  const input = await waitFor('the command box', async () => (await driver.findElements(By.css('[data-testid="process-command-input"]')))[0]);
  await input.sendKeys(`echo $$ > ${pidFile}; sleep 300`, '\uE007');
  await driver.findElement(By.css('[data-testid="processes-close"]')).click();
  const routine = await driver.executeAsyncScript(
    `const done = arguments[0];
     window.__TAURI_INTERNALS__.invoke('add_routine', { draft: { title: 'Water the plants', schedule: '0 9 * * *', timezone: 'UTC' } })
       .then(() => done('ok'), (e) => done(JSON.stringify(e)));`,
  );
  assert.equal(routine, 'ok');
  await waitFor('the menu to follow', async () => {
    const l = labels();
    // The command as the panel lists it (cut to 40 characters), the next run in the user's zone.
    const ok = l.includes('1 process running') && l.some((x) => x.startsWith('  echo $$ >')) && l.some((x) => /^Next: Water the plants .*09:00$/.test(x));
    if (!ok) throw new Error(`the menu reads ${JSON.stringify(l)}`);
    return ok;
  }, 10000);

  const now = menu();
  for (const label of ['Pause background activity', 'Open Vigil', 'Quit']) {
    assert.equal(now.find((e) => e.label === label)?.id, shown.find((e) => e.label === label).id, `${label} kept its id`);
  }
  clickEntry(pauseShown);
  await waitFor('paused in the menu', async () => menu().find((e) => e.label === 'Pause background activity')?.checked, 5000);
  await waitFor('paused in the window', async () =>
    (await driver.executeScript('return document.querySelector(\'[data-testid="heartbeat-status"]\').dataset.status')) === 'paused', 5000);
  click('Pause background activity');
  await waitFor('resumed', async () =>
    (await driver.executeScript('return document.querySelector(\'[data-testid="heartbeat-status"]\').dataset.status')) !== 'paused', 5000);
  assert.equal(menu().find((e) => e.label === 'Pause background activity')?.checked, false);
});

test("the tray's Quit asks while a process runs; confirming shuts down and kills it", async () => {
  const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  assert.ok(alive(pid));
  click('Quit');
  await waitFor('the quit prompt in the window', async () => (await driver.findElements(By.css('[data-testid="quit-prompt"]'))).length === 1, 5000);
  await driver.findElement(By.css('[data-testid="quit-confirm"]')).click().catch(() => {});
  await waitFor('the app to exit', async () => appPids().length === 0, 15000);
  await waitFor('the process killed', async () => !alive(pid), 5000);
  await quit(driver);
  driver = null;
});
