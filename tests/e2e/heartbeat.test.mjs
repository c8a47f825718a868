// The heartbeat in the real app: with a HEARTBEAT.md check and a short interval, a scripted
// alert reaches the desktop as exactly one notification; HEARTBEAT_OK replies raise none;
// the heartbeat runs in its own session and never sees the conversation beside it (only the
// daily reflection reads what the user wrote, once).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Harness, quit, messages, waitFor, sleep } from './harness.mjs';

const h = new Harness();
let driver;
const ALERT = 'Disk usage is at 91% on /. Consider cleaning ~/Downloads.';
/** Words only the conversation holds. */
const SECRET = 'PERIWINKLE-42';
const CONVERSATION = [
  { role: 'user', content: [{ type: 'text', text: `Keep this between us: the code word for the launch is ${SECRET}.` }] },
  { role: 'assistant', content: [{ type: 'text', text: `Noted: ${SECRET} stays in this conversation.` }], model: 'fake-model', stop_reason: 'end_turn' },
];

before(async () => {
  const workspace = path.join(h.dataDir, 'workspace');
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(path.join(workspace, 'HEARTBEAT.md'), '# Checks\n\n- If disk usage is over 80 %, tell me.\n');
  fs.writeFileSync(path.join(h.dataDir, 'settings.json'), JSON.stringify({ heartbeat: { every: '3s' } }));
  // A conversation already exists when the app starts.
  const sessions = path.join(h.dataDir, 'sessions');
  fs.mkdirSync(sessions);
  const t0 = Date.now() - 3600_000;
  const lines = CONVERSATION.map((m, i) => JSON.stringify({ ...m, ts: t0 + i * 5000 }));
  fs.writeFileSync(path.join(sessions, 'main.jsonl'), lines.join('\n') + '\n');
  await h.startFakeProvider({ steps: [{ kind: 'text', text: ALERT }], fallback: { kind: 'text', text: 'HEARTBEAT_OK' } });
  await h.startNotificationMonitor();
  await h.startDriver(h.providerEnv('anthropic'));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const notifies = () => (h.notificationLog().match(/member=Notify/g) ?? []).length;

test('an alert from HEARTBEAT.md raises exactly one notification; HEARTBEAT_OK raises none', async () => {
  await waitFor('the alert on D-Bus', async () => h.notificationLog().includes('Disk usage is at 91%'), 20000);
  assert.equal(notifies(), 1);
  // Let at least two more heartbeats run; they answer HEARTBEAT_OK and must stay silent.
  await waitFor('two more heartbeat requests', async () => h.fakeRequests().filter((r) => r.path === '/v1/messages').length >= 3, 20000);
  await sleep(500);
  assert.equal(notifies(), 1, 'HEARTBEAT_OK is not delivered');
  // The conversation is there, in the window...
  const shown = (await messages(driver)).map((m) => m.text);
  assert.ok(shown.length >= 2 && shown.slice(0, 2).every((t) => t.includes(SECRET)), `the conversation is shown: ${JSON.stringify(shown)}`);
  // ...and every heartbeat ran in its own session and never saw it: no request carries its words.
  // The one exception is the daily reflection after the first poll: its briefing quotes what
  // the user wrote (never Vigil's replies), to find routines they asked for.
  const requests = h.fakeRequests().filter((r) => r.path === '/v1/messages');
  const reflection = (r) => JSON.stringify(r.body.messages.at(-1)).includes('Reflection: under');
  const reflections = requests.filter(reflection);
  assert.equal(reflections.length, 1, 'one daily reflection');
  const briefing = JSON.stringify(reflections[0].body);
  assert.ok(briefing.includes(`the code word for the launch is ${SECRET}`), 'the user’s words are in the briefing');
  assert.ok(!briefing.includes(`Noted: ${SECRET}`), 'Vigil’s reply is not');
  for (const [i, r] of requests.entries()) {
    if (reflection(r)) continue;
    const sent = JSON.stringify(r.body);
    assert.match(sent, /If disk usage is over 80/, `request ${i} is a heartbeat`);
    assert.ok(!sent.includes(SECRET), `heartbeat request ${i} carries the conversation: ${sent.slice(0, 600)}`);
  }
  // The delivered result waits in the conversation's mailbox for the next turn.
  const meta = JSON.parse(fs.readFileSync(path.join(h.dataDir, 'sessions', 'main.meta.json'), 'utf8'));
  assert.ok(JSON.stringify(meta.meta.mailbox).includes('Disk usage is at 91%'), JSON.stringify(meta).slice(0, 400));
});

test('clicking the notification opens the background update it announced', async () => {
  const count = () => driver.executeScript('const b = document.querySelector(\'[data-testid="unread-badge"]\'); return b ? b.innerText : "";');
  await waitFor('the unread badge', async () => (await count()) === '1', 10000);
  const card = await driver.executeScript('const c = document.querySelector(\'[data-testid="background-update"]\'); return c && c.innerText;');
  assert.match(card, /Disk usage is at 91%/);
  // What a click does: dunst invokes the notification's default action over D-Bus.
  execFileSync('dunstctl', ['action', '0']);
  await waitFor('the card opened (no longer counted as unseen)', async () => (await count()) === '', 10000);
});
