// Settings → Approvals through the real window: the secrets hidden from every command (the
// defaults, `~/.ssh` first), the two network switches (the user's own turns on, runs nobody
// watches off), and each change saved by the core into approvals.json in the test's data
// folder: the unattended switch, an edited hidden list, Restore defaults. Then the app started
// where slirp4netns is missing (VIGIL_SLIRP4NETNS=/nonexistent): the pane says no command
// gets a network, whatever the switches say.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Harness, invoke, quit, screenshot, By, waitFor } from './harness.mjs';

const testid = (id) => By.css(`[data-testid="${id}"]`);

/** Scrolls the pane so `id` is at the top of the settings panel, as a user would. */
function scrollTo(driver, id) {
  return driver.executeScript(`document.querySelector('[data-testid="${id}"]').scrollIntoView({ block: 'start' })`);
}

/** What each network switch says and whether it is on, read in one script. */
function switches(driver) {
  return driver.executeScript(`
    return ['settings-sandbox-network', 'settings-sandbox-unattended-network'].map((id) => {
      const box = document.querySelector('[data-testid="' + id + '"]');
      return { label: box.closest('label').querySelector('.label').textContent, on: box.checked, disabled: box.disabled };
    });`);
}

/**
 * Registers the hooks of one app run: a fake provider that answers nothing but
 * HEARTBEAT_OK, the app started with `env`, its Settings open at the Sandbox part; quit after.
 * The returned object holds the harness and, once started, the driver.
 */
function sandboxPane(env) {
  const app = { h: new Harness(), driver: null };
  before(async () => {
    await app.h.startFakeProvider({ steps: [], fallback: { kind: 'text', text: 'HEARTBEAT_OK' } });
    await app.h.startDriver(app.h.providerEnv('anthropic', env));
    [app.driver] = await app.h.launchApp();
    await app.driver.findElement(testid('open-settings')).click();
    await waitFor('the Sandbox part', async () => (await app.driver.findElements(testid('settings-sandbox'))).length === 1, 10000);
  });
  after(async () => {
    await quit(app.driver);
    await app.h.stop();
  });
  return app;
}

describe('the sandbox settings', () => {
  const app = sandboxPane({ VIGIL_APPROVAL_POLICY: 'ask' });
  const saved = () => JSON.parse(fs.readFileSync(path.join(app.h.dataDir, 'approvals.json'), 'utf8')).sandbox;

  test('the pane shows the hidden secrets and both network switches as the core holds them', async () => {
    const view = (await invoke(app.driver, 'get_approvals')).value.sandbox;
    assert.equal(view.network, true);
    assert.equal(view.unattended_network, false, 'runs nobody watches have no network by default');
    assert.equal(view.network_available, true, 'slirp4netns is installed here (make deps-run)');
    assert.deepEqual(view.hidden, view.default_hidden);

    await scrollTo(app.driver, 'settings-sandbox');
    assert.deepEqual(await switches(app.driver), [
      { label: 'Your own turns’ commands may use the network', on: true, disabled: false },
      { label: 'Runs nobody watches may use the network (heartbeat, routines, continuations)', on: false, disabled: false },
    ]);
    assert.match(
      await app.driver.findElement(testid('settings-sandbox-unattended-warning')).getText(),
      /could send your files away, with nobody there to stop it/,
    );
    assert.equal((await app.driver.findElements(testid('settings-sandbox-network-problem'))).length, 0);

    const lines = (await app.driver.findElement(testid('settings-sandbox-hidden-text')).getAttribute('value')).split('\n');
    assert.equal(lines[0], '~/.ssh');
    assert.deepEqual(lines, view.default_hidden, 'the whole list, one path per line');
    assert.match(await app.driver.findElement(testid('settings-sandbox-hidden-note')).getText(), /appear empty to every command/);
    await screenshot(app.driver, 'sandbox-settings-switches.png');
    await scrollTo(app.driver, 'settings-sandbox-hidden');
    await screenshot(app.driver, 'sandbox-settings-hidden.png');
  });

  test('flipping the unattended switch is saved in approvals.json at once', async () => {
    await scrollTo(app.driver, 'settings-sandbox');
    const file = path.join(app.h.dataDir, 'approvals.json');
    const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
    await app.driver.findElement(testid('settings-sandbox-unattended-network')).click();
    await waitFor('approvals.json with the switch on', () => fs.existsSync(file) && saved().unattended_network === true, 5000);
    assert.notEqual(fs.readFileSync(file, 'utf8'), before);
    const now = saved();
    assert.equal(now.network, true, 'the user’s own switch is untouched');
    assert.deepEqual(now.hidden, (await invoke(app.driver, 'get_approvals')).value.sandbox.default_hidden);
    assert.deepEqual(
      (await switches(app.driver)).map((s) => s.on),
      [true, true],
    );
    assert.equal((await invoke(app.driver, 'get_approvals')).value.sandbox.unattended_network, true);
    await screenshot(app.driver, 'sandbox-settings-unattended-on.png');

    await app.driver.findElement(testid('settings-sandbox-unattended-network')).click();
    await waitFor('approvals.json with the switch off', () => saved().unattended_network === false, 5000);
  });

  test('an edited hidden list is tidied and saved by the core; a bad entry is refused; defaults come back', async () => {
    await scrollTo(app.driver, 'settings-sandbox-hidden');
    const box = await app.driver.findElement(testid('settings-sandbox-hidden-text'));
    const retype = async (text) => {
      await app.driver.executeScript('const e = arguments[0]; e.value = ""; e.dispatchEvent(new Event("input", { bubbles: true }))', box);
      // WebKitWebDriver drops a typed "\n": each new line is the Enter key, as a user types it.
      const keys = text.split('\n').flatMap((line, i) => (i === 0 ? [line] : ['\uE007', line])).filter((k) => k !== '');
      if (keys.length > 0) await box.sendKeys(...keys);
    };

    // The core refuses what the UI lets through (the whole file system), and saves nothing.
    await retype('~/.ssh\n/');
    await app.driver.findElement(testid('settings-sandbox-hidden-save')).click();
    const refusal = await waitFor('the refusal', async () => {
      const found = await app.driver.findElements(testid('settings-sandbox-hidden-error'));
      return found.length === 1 && found[0].getText();
    }, 5000);
    assert.match(refusal, /^\/ would hide the whole file system/);
    assert.deepEqual(saved().hidden, (await invoke(app.driver, 'get_approvals')).value.sandbox.default_hidden, 'nothing saved');
    const direct = await invoke(app.driver, 'set_sandbox_hidden', { hidden: ['relative/path'] });
    assert.equal(direct.ok, false);
    assert.deepEqual([direct.error.code, direct.error.field], ['invalid_path', 'hidden']);

    await retype('~/.ssh/\n\n  /srv/e2e-secrets \n~/.ssh');
    await app.driver.findElement(testid('settings-sandbox-hidden-save')).click();
    await waitFor('the list saved', () => JSON.stringify(saved().hidden) === JSON.stringify(['~/.ssh', '/srv/e2e-secrets']), 5000);
    await waitFor('the box showing what was kept', async () => (await box.getAttribute('value')) === '~/.ssh\n/srv/e2e-secrets', 5000);

    await retype('');
    await app.driver.findElement(testid('settings-sandbox-hidden-save')).click();
    await waitFor('nothing hidden', () => saved().hidden.length === 0, 5000);
    const warning = await waitFor('the warning', async () => {
      const found = await app.driver.findElements(testid('settings-sandbox-hidden-empty'));
      return found.length === 1 && found[0].getText();
    }, 5000);
    assert.match(warning, /^Nothing is hidden: commands can read ~\/\.ssh/);
    await screenshot(app.driver, 'sandbox-settings-hidden-empty.png');

    await app.driver.findElement(testid('settings-sandbox-hidden-defaults')).click();
    const defaults = (await invoke(app.driver, 'get_approvals')).value.sandbox.default_hidden;
    await waitFor('the defaults saved', () => JSON.stringify(saved().hidden) === JSON.stringify(defaults), 5000);
    assert.equal(await box.getAttribute('value'), defaults.join('\n'));
  });

  test('a socket granted by its path is saved by the core, listed with its warning, and taken back', async () => {
    const socketPath = path.join(app.h.dataDir, '..', `vigil-e2e-${process.pid}.sock`);
    const server = net.createServer().listen(socketPath);
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const refused = await invoke(app.driver, 'set_sandbox_sockets', { sockets: [path.join(app.h.dataDir, 'approvals.json')] });
      assert.equal(refused.ok, false, 'a file that is no socket');
      assert.deepEqual([refused.error.code, refused.error.field], ['invalid_socket', 'sockets']);

      await scrollTo(app.driver, 'settings-sandbox-sockets');
      await app.driver.findElement(testid('settings-sandbox-socket-input')).sendKeys(socketPath);
      await app.driver.findElement(testid('settings-sandbox-socket-add')).click();
      const real = fs.realpathSync(socketPath);
      await waitFor('the grant saved', () => JSON.stringify(saved().sockets ?? []) === JSON.stringify([real]), 5000);
      const row = await waitFor('the row', async () => (await app.driver.findElements(testid('settings-sandbox-socket')))[0], 5000);
      assert.equal(await row.getAttribute('data-socket'), real);
      assert.match(await app.driver.findElement(testid('settings-sandbox-sockets')).getText(), /runs nobody watches never do/);
      await screenshot(app.driver, 'sandbox-settings-sockets.png');
      await row.findElement(By.css('button')).click();
      await waitFor('the grant taken back', () => (saved().sockets ?? []).length === 0, 5000);
    } finally {
      server.close();
    }
  });
});

describe('without slirp4netns', () => {
  const app = sandboxPane({ VIGIL_SLIRP4NETNS: '/nonexistent' });

  test('the pane says no command gets a network, and the switches still save', async () => {
    const view = (await invoke(app.driver, 'get_approvals')).value.sandbox;
    assert.equal(view.network_available, false);
    assert.match(view.network_problem, /slirp4netns is not installed/);
    await scrollTo(app.driver, 'settings-sandbox');
    assert.equal(
      await app.driver.findElement(testid('settings-sandbox-network-problem')).getText(),
      'Commands get no network, even where it is allowed: slirp4netns is not installed; install the slirp4netns package.',
    );
    await screenshot(app.driver, 'sandbox-settings-no-slirp.png');
    await app.driver.findElement(testid('settings-sandbox-unattended-network')).click();
    await waitFor('the switch saved', async () => (await invoke(app.driver, 'get_approvals')).value?.sandbox.unattended_network === true, 5000);
  });
});
