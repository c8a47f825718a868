// Approvals through the real window. The agent's commands wait for the user on a card that
// shows what would run: the command, its env, its folder, and each part of a compound line
// marked allowed or not; "always" is not offered for a shell. Settings → Approvals shows the
// sandbox's state, the network switch (saved by the core) and the extra writable folders.
// Then the same app started where bubblewrap is missing (VIGIL_BWRAP=/nonexistent): the
// pane says the sandbox is unavailable and what that means, and a command's card warns that
// it would run outside the sandbox.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Harness, invoke, quit, screenshot, send, By, waitFor } from './harness.mjs';

const COMPOUND = 'git status && rm -rf build';
const SHELL = "bash -c 'ls'";

/** Every pending card, read in one script so a re-render cannot interleave. */
function pendingCards(driver) {
  return driver.executeScript(`
    return [...document.querySelectorAll('[data-testid="approval-card"][data-state="pending"]')].map((card) => {
      const q = (id) => card.querySelector('[data-testid="' + id + '"]');
      return {
        id: card.dataset.approvalId,
        title: card.querySelector('h3')?.textContent ?? '',
        command: q('approval-command')?.textContent ?? '',
        cwd: q('approval-cwd')?.textContent ?? null,
        env: [...card.querySelectorAll('[data-testid="approval-env-line"]')].map((e) => e.textContent),
        parts: [...card.querySelectorAll('[data-testid="approval-part"]')].map((p) => ({
          text: p.querySelector('code')?.textContent,
          covered: p.dataset.covered === 'true',
          label: p.querySelector('.tag')?.textContent,
        })),
        always: q('approval-always') !== null,
        outside: q('approval-outside-sandbox')?.textContent ?? null,
        unprovable: q('approval-unprovable')?.textContent ?? null,
      };
    });`);
}

/** The pending card for `command`; `not`: the id of an earlier card for the same line. */
async function cardFor(driver, command, not = null) {
  return waitFor(
    `the approval card for ${command}`,
    async () => (await pendingCards(driver)).find((c) => c.command === command && c.id !== not),
    20000,
  );
}

async function deny(driver, card) {
  await driver.findElement(By.css(`[data-approval-id="${card.id}"] [data-testid="approval-deny"]`)).click();
  await waitFor('the card to close', async () => !(await pendingCards(driver)).some((c) => c.id === card.id), 10000);
}

async function openApprovalsPane(driver) {
  if ((await driver.findElements(By.css('[data-testid="settings-panel"]'))).length === 0) {
    await driver.findElement(By.css('[data-testid="open-settings"]')).click();
  }
  await waitFor('the Sandbox part', async () => (await driver.findElements(By.css('[data-testid="settings-sandbox"]'))).length === 1, 10000);
  // The whole Approvals section from its heading, as a user scrolls to it.
  await driver.executeScript('document.querySelector(\'[data-testid="settings-approvals"]\').scrollIntoView({ block: "start" })');
}

const text = (driver, sel) => driver.executeScript(`return document.querySelector(${JSON.stringify(sel)})?.innerText ?? null`);

describe('with bubblewrap', () => {
  const h = new Harness();
  let driver;
  // Outside the data folder, which no writable folder may hold or lie in.
  const extra = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-e2e-writable-'));
  // Where a link in the workspace leads: the card names this real folder, not the link.
  const elsewhere = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-e2e-elsewhere-')));

  before(async () => {
    await h.startFakeProvider({
      steps: [
        { kind: 'tool_calls', calls: [{ id: 'call_compound', name: 'exec', arguments: { command: COMPOUND } }] },
        { kind: 'tool_calls', calls: [{ id: 'call_env', name: 'exec', arguments: { command: COMPOUND, env: { FOO: '1' } } }] },
        { kind: 'tool_calls', calls: [{ id: 'call_shell', name: 'exec', arguments: { command: SHELL } }] },
        { kind: 'tool_calls', calls: [{ id: 'call_link', name: 'exec', arguments: { command: 'touch made-here', workdir: 'elsewhere-link' } }] },
        { kind: 'text', text: 'Understood, nothing was run.' },
      ],
      fallback: { kind: 'text', text: 'HEARTBEAT_OK' },
    });
    await h.startDriver(h.providerEnv('anthropic', { VIGIL_APPROVAL_POLICY: 'ask' }));
    [driver] = await h.launchApp();
  });

  after(async () => {
    await quit(driver);
    await h.stop();
    fs.rmSync(extra, { recursive: true, force: true });
    fs.rmSync(elsewhere, { recursive: true, force: true });
  });

  test('the card shows the parts of a compound line, its env and cwd; a shell gets no "always"', async () => {
    // What a denied `rm -rf build` would take, and a link out of the workspace.
    const workspace = path.join(h.dataDir, 'workspace');
    fs.mkdirSync(path.join(workspace, 'build'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'build', 'keep'), 'kept');
    fs.symlinkSync(elsewhere, path.join(workspace, 'elsewhere-link'));
    await send(driver, 'tidy the build folder');

    const compound = await cardFor(driver, COMPOUND);
    assert.equal(compound.title, 'Vigil wants to run');
    assert.match(compound.cwd ?? '', /^in \/.+\/workspace$/, 'the folder it runs in');
    assert.deepEqual(compound.parts, [
      { text: 'git status', covered: true, label: 'allowed' },
      { text: 'rm -rf build', covered: false, label: 'needs you' },
    ]);
    assert.deepEqual(compound.env, []);
    assert.equal(compound.always, false, 'a compound line is approved once, never remembered');
    assert.equal(compound.outside, null, 'the sandbox works here: no warning');
    await screenshot(driver, 'approval-card-compound.png');
    await deny(driver, compound);

    // The same line with an env.
    const withEnv = await cardFor(driver, COMPOUND, compound.id);
    assert.deepEqual(withEnv.env, ['FOO=1'], 'the env is part of what is approved');
    assert.match(withEnv.cwd ?? '', /workspace$/);
    // A rule never covers a call that sets env: every part needs the user.
    assert.deepEqual(
      withEnv.parts.map((p) => [p.text, p.covered]),
      [
        ['git status', false],
        ['rm -rf build', false],
      ],
    );
    assert.equal(withEnv.always, false);
    await screenshot(driver, 'approval-card-env.png');
    await deny(driver, withEnv);

    const shell = await cardFor(driver, SHELL);
    assert.equal(shell.always, false, '"always" is not offered for bash -c');
    assert.equal(
      await driver.executeScript(`return document.querySelector('[data-approval-id="${shell.id}"] [data-testid="approval-approve"]')?.textContent.trim()`),
      'Run once',
    );
    await deny(driver, shell);

    // Run in a link to a folder outside: the card shows where it really runs.
    const linked = await cardFor(driver, 'touch made-here');
    assert.equal(linked.cwd, `in ${elsewhere}`, 'the real folder, not the link in the workspace');
    await deny(driver, linked);

    await waitFor('the reply', async () => (await driver.executeScript('return document.body.innerText')).includes('Understood, nothing was run.'), 15000);
    // Denied: nothing ran.
    const last = h.fakeRequests().filter((r) => r.path === '/v1/messages').at(-1);
    const results = last.body.messages
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b) => b.type === 'tool_result');
    assert.equal(results.length, 4);
    for (const r of results) assert.match(JSON.stringify(r.content), /denied/i);
    // Denied: nothing ran. The build folder is whole, nothing was made, no process started.
    assert.equal(fs.readFileSync(path.join(workspace, 'build', 'keep'), 'utf8'), 'kept');
    assert.equal(fs.existsSync(path.join(elsewhere, 'made-here')), false);
    assert.deepEqual(await invoke(driver, 'list_processes'), { ok: true, value: [] });
  });

  test('Settings → Approvals shows the sandbox ready and saves the network switch in the core', async () => {
    await openApprovalsPane(driver);
    assert.equal(await driver.executeScript('return document.querySelector(\'[data-testid="settings-sandbox"]\').dataset.available'), 'true');
    assert.match(await text(driver, '[data-testid="settings-sandbox-headline"]'), /^Ready/);

    const before = await invoke(driver, 'get_approvals');
    assert.equal(before.ok, true);
    assert.equal(before.value.sandbox.network, true, 'the network is allowed by default');
    const box = await driver.findElement(By.css('[data-testid="settings-sandbox-network"]'));
    assert.equal(await box.isSelected(), true);

    await box.click();
    await waitFor('the network off in the core', async () => (await invoke(driver, 'get_approvals')).value?.sandbox.network === false, 5000);
    assert.equal(await box.isSelected(), false);
    const saved = JSON.parse(fs.readFileSync(path.join(h.dataDir, 'approvals.json'), 'utf8'));
    assert.equal(saved.sandbox.network, false, 'saved on disk, for the next start');

    await screenshot(driver, 'approvals-sandbox-off-network.png');
    await box.click();
    await waitFor('the network back on', async () => (await invoke(driver, 'get_approvals')).value?.sandbox.network === true, 5000);
  });

  test('extra writable folders: added by a full path, refused with a reason, removed', async () => {
    await openApprovalsPane(driver);
    const input = await driver.findElement(By.css('[data-testid="settings-sandbox-folder-input"]'));

    // The core refuses Vigil's own data folder, and the error shows under the field.
    await input.sendKeys(h.dataDir, '\uE007');
    const refusal = await waitFor('the refusal', () => text(driver, '[data-testid="settings-sandbox-folder-error"]'), 5000);
    assert.match(refusal, /Vigil's own data folder/);
    // The Rust command's error, as the window receives it.
    const direct = await invoke(driver, 'set_sandbox_writable', { folders: ['relative/path'] });
    assert.equal(direct.ok, false);
    assert.equal(direct.error.code, 'invalid_folder');
    assert.equal(direct.error.field, 'writable');
    assert.match(direct.error.message, /not a full path/);

    await driver.executeScript('const e = arguments[0]; e.value = ""; e.dispatchEvent(new Event("input", { bubbles: true }))', input);
    await input.sendKeys(extra, '\uE007');
    await waitFor('the folder listed', async () => (await driver.findElements(By.css(`[data-testid="settings-sandbox-folder"][data-folder="${extra}"]`))).length === 1, 5000);
    assert.deepEqual((await invoke(driver, 'get_approvals')).value.sandbox.writable, [fs.realpathSync(extra)]);
    assert.equal(await text(driver, '[data-testid="settings-sandbox-folder-error"]'), null);
    assert.match(await text(driver, '[data-testid="settings-sandbox-caches"]'), /~\/\.cargo or ~\/\.npm are not writable by default/);
    await screenshot(driver, 'approvals-sandbox-writable.png');

    await driver.findElement(By.css(`[data-testid="settings-sandbox-folder"][data-folder="${extra}"] [data-testid="settings-sandbox-folder-remove"]`)).click();
    await waitFor('the folder gone', async () => (await invoke(driver, 'get_approvals')).value?.sandbox.writable.length === 0, 5000);
    await waitFor('the list empty', async () => (await driver.findElements(By.css('[data-testid="settings-sandbox-writable-empty"]'))).length === 1, 5000);
  });
});

describe('without bubblewrap', () => {
  const h = new Harness();
  let driver;

  before(async () => {
    await h.startFakeProvider({
      steps: [
        { kind: 'tool_calls', calls: [{ id: 'call_plain', name: 'exec', arguments: { command: 'ls' } }] },
        { kind: 'text', text: 'Understood.' },
      ],
      fallback: { kind: 'text', text: 'HEARTBEAT_OK' },
    });
    await h.startDriver(h.providerEnv('anthropic', { VIGIL_APPROVAL_POLICY: 'ask', VIGIL_BWRAP: '/nonexistent' }));
    [driver] = await h.launchApp();
  });

  after(async () => {
    await quit(driver);
    await h.stop();
  });

  test('a command that would run outside the sandbox says so on its card', async () => {
    await send(driver, 'list the files');
    const card = await cardFor(driver, 'ls');
    assert.match(card.outside ?? '', /Outside the sandbox/);
    assert.equal(card.always, false, 'leaving the sandbox is never remembered');
    await deny(driver, card);
  });

  test('the Approvals pane says the sandbox is unavailable and what that means', async () => {
    await openApprovalsPane(driver);
    assert.equal(await driver.executeScript('return document.querySelector(\'[data-testid="settings-sandbox"]\').dataset.available'), 'false');
    assert.equal(
      await text(driver, '[data-testid="settings-sandbox-headline"]'),
      'The sandbox is unavailable: bubblewrap (bwrap) is not installed; install the bubblewrap package.',
    );
    assert.equal(
      await text(driver, '[data-testid="settings-sandbox-meaning"]'),
      'Until it works, commands from the heartbeat and routines are refused, and your own turns ask before every command.',
    );
    const view = await invoke(driver, 'get_approvals');
    assert.equal(view.value.sandbox.available, false);
    assert.match(view.value.sandbox.problem, /not installed/);
    // The switch is still there and still saved: it applies once bubblewrap works.
    assert.equal(await driver.findElement(By.css('[data-testid="settings-sandbox-network"]')).isSelected(), true);
    await screenshot(driver, 'approvals-no-sandbox.png');
  });
});
