// Issue 7, bad input: no notification service on the desktop. The app runs on a session bus
// of its own that can start no service (so nothing answers org.freedesktop.Notifications):
// a finished command's notification cannot be shown, the window says so once, and nothing
// is lost: the command and its output stay in the Processes panel.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ARTIFACTS, Harness, quit, By, waitFor } from './harness.mjs';

const h = new Harness();
let driver;

/** A session bus with no service directories: names are only there if someone owns them. */
async function busWithoutServices() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-bus-'));
  const config = path.join(dir, 'session.conf');
  fs.writeFileSync(
    config,
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=${dir}</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`,
  );
  const bus = h.spawn('dbus-daemon', ['--config-file', config, '--nofork', '--print-address=1']);
  let out = '';
  bus.stdout.on('data', (d) => (out += d));
  return waitFor('the bus address', async () => out.trim().split('\n')[0] || null, 5000);
}

before(async () => {
  await h.startFakeProvider({ steps: [], fallback: { kind: 'text', text: 'HEARTBEAT_OK' } });
  const address = await busWithoutServices();
  await h.startDriver(h.providerEnv('anthropic', { DBUS_SESSION_BUS_ADDRESS: address }));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const css = (sel) => driver.findElement(By.css(sel));
const banners = () =>
  driver.executeScript(`return [...document.querySelectorAll('[data-testid="error-banner"]')].map((b) => b.dataset.kind + ': ' + b.innerText)`);

test('without a notification service the window says so once, and the finished command is kept', async () => {
  await css('[data-testid="processes-toggle"]').click();
  const input = await waitFor('the command box', async () => (await driver.findElements(By.css('[data-testid="process-command-input"]')))[0], 5000);
  await input.sendKeys('echo first-without-notifier', '\uE007');
  const shown = await waitFor('the banner', async () => {
    const b = await banners();
    return b.length > 0 ? b : null;
  }, 15000);
  assert.equal(shown.length, 1, shown.join('\n'));
  assert.match(shown[0], /^desktop: Desktop notifications cannot be shown: is a notification service running\? Nothing is lost/);

  // A second notification that cannot be shown says nothing new.
  await input.sendKeys('echo second-without-notifier', '\uE007');
  await waitFor('both commands finished', async () =>
    (await driver.findElements(By.css('[data-testid="process-item"][data-state="exited"]'))).length === 2, 10000);
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal((await banners()).length, 1);
  const listed = await driver.executeScript(
    `return [...document.querySelectorAll('[data-testid="process-item"]')].map((e) => e.innerText).join('\\n')`,
  );
  assert.match(listed, /first-without-notifier/);
  assert.match(listed, /second-without-notifier/);
  await css('[data-testid="processes-close"]').click();
  // The whole screen through X: WebDriver's screenshot waited ~90 s on this private bus.
  await driver.executeAsyncScript('const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 50)));');
  execFileSync('import', ['-window', 'root', path.join(ARTIFACTS, 'no-notifier.png')]);
});
