// Issue 18, item 8: notification text is escaped for servers that render markup. The agent's
// report on a finished background command (model output) holds freedesktop body markup; the
// Notify call on D-Bus must carry it escaped, so dunst (which advertises `body-markup` and
// draws <b>, <i>, <a>, <img>) shows it as text.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import { ARTIFACTS, Harness, appPids, quit, send, waitFor, sleep } from './harness.mjs';

const h = new Harness();
let driver;

const REPORT = 'Build finished: <b>3 warnings</b> & <i>no errors</i> <a href="http://127.0.0.1:9/phish">Open Vigil</a> <img src="file:///etc/hostname" alt="x"/>';
const ESCAPED =
  'Build finished: &lt;b&gt;3 warnings&lt;/b&gt; &amp; &lt;i&gt;no errors&lt;/i&gt; ' +
  '&lt;a href="http://127.0.0.1:9/phish"&gt;Open Vigil&lt;/a&gt; &lt;img src="file:///etc/hostname" alt="x"/&gt;';

before(async () => {
  await h.startFakeProvider({
    steps: [
      { kind: 'tool_calls', calls: [{ id: 'call_bg', name: 'exec', arguments: { command: 'sleep 0.5; echo built', background: true } }] },
      { kind: 'text', text: 'It is building in the background.' },
      { kind: 'text', text: REPORT },
    ],
    fallback: { kind: 'text', text: 'HEARTBEAT_OK' },
  });
  await h.startNotificationMonitor();
  await h.startDriver(h.providerEnv('anthropic', { VIGIL_APPROVAL_POLICY: 'full-auto' }));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

/** The Notify calls dbus-monitor saw, each as its printed arguments. */
const notifyCalls = () => h.notificationLog().split(/^method call /m).filter((c) => /member=Notify\b/.test(c.split('\n')[0]));

test("markup in the agent's report reaches the notification server escaped", { timeout: 60_000 }, async () => {
  await send(driver, 'build it in the background');
  const call = await waitFor('the report on D-Bus', async () => notifyCalls().find((c) => c.includes('3 warnings')), 20000);
  assert.ok(call.includes(`string "${ESCAPED}"`), call);
  assert.ok(!/<b>|<i>|<a |<img /.test(call), `no markup left in the Notify call:\n${call}`);
  // The server this was sent to does render markup, so the escaping is what kept it text.
  const caps = execFileSync('dbus-send', ['--session', '--print-reply', '--dest=org.freedesktop.Notifications',
    '/org/freedesktop/Notifications', 'org.freedesktop.Notifications.GetCapabilities']).toString();
  assert.match(caps, /"body-markup"/);
  await sleep(500);
  try {
    execFileSync('import', ['-window', 'root', path.join(ARTIFACTS, 'notification-markup-escaped.png')]);
  } catch (e) {
    console.log(`note: desktop screenshot failed: ${e.message}`);
  }
});

// Issue 22: zbus (notifications, single instance) does its blocking work on the app's tokio
// runtime. On its own async-io backend it starts a `blocking` crate thread that never ends
// and wakes every 500 ms, window open or closed to the tray.
test('after a notification, no thread of the app wakes on its own twice a second', { timeout: 30_000 }, async () => {
  const [pid] = appPids();
  assert.ok(pid, 'the app runs');
  const threads = fs.readdirSync(`/proc/${pid}/task`).map((tid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      return '';
    }
  });
  assert.ok(threads.some((t) => t.startsWith('tokio-rt-worker')), threads.join(', '));
  assert.deepEqual(threads.filter((t) => /^blocking-\d+$/.test(t)), [], `threads: ${threads.join(', ')}`);
});
