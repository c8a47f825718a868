// The daily reflection in the real app (issue 20 item 4): after the user asked in the chat for
// something regular, the first interval check is followed by the reflection, whose scripted
// `routine_add` makes a suggestion: off, marked "Suggested" in the Routines pane, announced
// once on the desktop; "Turn on" makes it an active routine. Screenshot of the pane.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, By, quit, screenshot, send, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
const css = (selector) => driver.findElement(By.css(selector));
const textOf = (selector) =>
  driver.executeScript(`const e = document.querySelector(${JSON.stringify(selector)}); return e ? e.innerText : null;`);
const requests = () => h.fakeRequests().filter((r) => r.path === '/v1/messages');
const isReflection = (r) => JSON.stringify(r.body.messages.at(-1)).includes('Reflection: under');

before(async () => {
  // Interval checks every 3 s; HEARTBEAT.md stays the empty template, so they call nobody.
  fs.writeFileSync(path.join(h.dataDir, 'settings.json'), JSON.stringify({ heartbeat: { every: '3s' } }));
  await h.startFakeProvider({
    steps: [
      { kind: 'text', text: 'Sure, I will keep that in mind.' },
      { kind: 'tool_calls', calls: [{ id: 'call_list', name: 'routine_list', arguments: { include_disabled: true } }] },
      {
        kind: 'tool_calls',
        calls: [
          {
            id: 'call_add',
            name: 'routine_add',
            arguments: { title: 'Stretch', description: 'Remind the user to stand up and stretch.', schedule: '0 15 * * *', kind: 'time_reminder' },
          },
        ],
      },
      { kind: 'text', text: 'HEARTBEAT_OK' },
    ],
    fallback: { kind: 'text', text: 'HEARTBEAT_OK' },
  });
  await h.startNotificationMonitor();
  await h.startDriver(h.providerEnv('anthropic'));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

test('the reflection suggests a routine the user asked for; the user turns it on', async () => {
  await send(driver, 'Please remind me to stretch every afternoon at 3.');
  await waitFor('the suggestion on the desktop', async () => h.notificationLog().includes('Vigil suggests a routine'), 30000);
  const reflections = requests().filter(isReflection);
  assert.equal(reflections.length, 1, 'one reflection');
  assert.match(JSON.stringify(reflections[0].body), /remind me to stretch every afternoon/, 'its briefing quotes the user');

  await css('[data-testid="routines-toggle"]').click();
  await waitFor('the suggested routine', async () => (await textOf('[data-testid="routine-item"]'))?.includes('Stretch'));
  assert.equal(await textOf('[data-testid="routine-state"]'), 'Suggested');
  assert.match(await textOf('[data-testid="routine-made-by"]'), /^Suggested by Vigil/);
  const item = css('[data-testid="routine-item"]');
  assert.equal(await item.getAttribute('data-enabled'), 'false', 'off until the user says so');
  await screenshot(driver, 'reflection-suggested.png');

  const toggle = css('[data-testid="routine-toggle-enabled"]');
  assert.equal(await toggle.getText(), 'Turn on');
  await toggle.click();
  await waitFor('the routine active', async () => (await textOf('[data-testid="routine-state"]')) === 'Active', 10000);
  assert.match(await textOf('[data-testid="routine-made-by"]'), /Added by Vigil on its own/);
  const file = fs.readFileSync(path.join(h.dataDir, 'workspace', 'HEARTBEAT.md'), 'utf8');
  assert.match(file, /"title": "Stretch"/);
  assert.doesNotMatch(file, /"suggested"/, 'turned on, it is an ordinary routine');
  assert.equal((h.notificationLog().match(/Vigil suggests a routine/g) ?? []).length, 1, 'announced once');
});
