// The phone channels through the real window, with the fake Telegram Bot API as the phone
// (crates/vigil-fake-phone): Settings → Away shows a pairing code, the "phone" sends it to
// the bot, and the pane shows the chat paired and the channel connected. Then a command the
// agent wants waits on a card in the window and as a message with Allow once / Deny on the
// phone; the phone's Allow runs it and the card disappears from the window.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { Harness, quit, screenshot, send, By, waitFor } from './harness.mjs';

const TARGET = process.env.CARGO_TARGET_DIR ?? path.join(import.meta.dirname, '../../target');
const PHONE = path.join(TARGET, 'debug', 'vigil-fake-phone');
const BOT_TOKEN = '4242:e2e-bot-token';
const CHAT = 77;

/** The fake phone: one JSON command a line in, one JSON answer a line out. */
class Phone {
  constructor(h) {
    if (!fs.existsSync(PHONE)) throw new Error(`${PHONE} is missing: run \`cargo build -p vigil-fake-phone\` first`);
    this.child = h.spawn(PHONE, ['--telegram-token', BOT_TOKEN], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.lines = readline.createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
  }

  async next() {
    const { value } = await this.lines.next();
    return JSON.parse(value);
  }

  async ask(command) {
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
    return this.next();
  }
}

const text = (driver, sel) => driver.executeScript(`return document.querySelector(${JSON.stringify(sel)})?.innerText ?? null`);

describe('a Telegram chat paired from Settings → Away', () => {
  const h = new Harness();
  let driver;
  let phone;
  const marker = path.join(h.dataDir, 'workspace', 'allowed-from-the-phone');

  before(async () => {
    phone = new Phone(h);
    const { telegram } = await phone.next();
    // Telegram set up as the pane saves it, the bot token from the environment; sent always.
    fs.mkdirSync(path.join(h.dataDir, 'channels'), { recursive: true });
    fs.writeFileSync(
      path.join(h.dataDir, 'channels', 'state.json'),
      JSON.stringify({ settings: { telegram: { api_base: telegram }, when: 'always', kinds: {} }, offset: 0 }),
    );
    await h.startFakeProvider({
      steps: [
        { kind: 'tool_calls', calls: [{ id: 'call_touch', name: 'exec', arguments: { command: `touch ${marker}` } }] },
        { kind: 'text', text: 'Made it.' },
      ],
      fallback: { kind: 'text', text: 'HEARTBEAT_OK' },
    });
    await h.startDriver(h.providerEnv('anthropic', { VIGIL_APPROVAL_POLICY: 'ask', VIGIL_TELEGRAM_TOKEN: BOT_TOKEN }));
    [driver] = await h.launchApp();
  });

  after(async () => {
    await quit(driver);
    await h.stop();
  });

  test('pairs by the code the pane shows and says the channel is connected', async () => {
    await driver.findElement(By.css('[data-testid="open-settings"]')).click();
    await waitFor('the Away pane', async () => (await driver.findElements(By.css('[data-testid="away-pair"]'))).length === 1, 20000);
    await driver.executeScript('document.querySelector(\'[data-testid="settings-away"]\').scrollIntoView({ block: "start" })');
    await driver.findElement(By.css('[data-testid="away-pair"]')).click();
    const pairing = await waitFor('the code', async () => text(driver, '[data-testid="away-pairing"]'), 10000);
    const code = pairing.match(/Send (\S+) to your bot/)[1];
    assert.match(pairing, /within 10 min \(5 tries left\)/);
    await phone.ask({ send: { chat_id: 99, text: 'NOTTHECODE' } });
    await phone.ask({ send: { chat_id: CHAT, text: `/start ${code}` } });
    const paired = await waitFor('the chat paired', async () => text(driver, '[data-testid="away-paired"]'), 20000);
    assert.match(paired, new RegExp(`Paired with chat ${CHAT}`));
    const state = await waitFor(
      'Telegram connected',
      async () => {
        const s = await text(driver, '[data-channel="telegram"] [data-testid="away-state"]');
        return s?.startsWith('Connected') ? s : null;
      },
      20000,
    );
    assert.match(state, /answers approvals/);
    assert.match(await text(driver, '[data-testid="away-refused"]'), /Refused answers: 1/, 'the wrong code was counted');
    const { messages } = await phone.ask({ messages: CHAT });
    assert.match(messages[0].text, /^Paired with Vigil/);
    await screenshot(driver, 'away-pane-paired.png');
    // Health, further down the pane, has a row for the channel (it asks again every 3 s).
    const row = await waitFor(
      'the Telegram row in Health',
      async () => {
        const t = await text(driver, '[data-testid="health-row"][data-key="channel-telegram"]');
        return t?.includes('Connected') ? t : null;
      },
      15000,
    );
    assert.match(row, /Phone: Telegram/);
    assert.match(await text(driver, '[data-testid="health-row"][data-key="channel-answers"]'), /1 refused/);
    await driver.executeScript('document.querySelector(\'[data-testid="settings-close"]\').click()');
  });

  test('an approval answered from the phone disappears from the card and the command runs', async () => {
    await send(driver, 'make the marker');
    const card = await waitFor(
      'the approval card',
      async () => (await driver.findElements(By.css('[data-testid="approval-card"][data-state="pending"]')))[0],
      20000,
    );
    assert.ok(card);
    const ask = await waitFor(
      'the question on the phone',
      async () => (await phone.ask({ messages: CHAT })).messages.find((m) => m.buttons.length > 0),
      20000,
    );
    assert.deepEqual(
      ask.buttons.map(([label]) => label),
      ['Allow once', 'Deny'],
    );
    assert.match(ask.text, /touch/);
    const { answer } = await phone.ask({ press: { chat_id: CHAT, message_id: ask.message_id, data: ask.buttons[0][1] } });
    assert.equal(answer, 'Allowed once.');
    await waitFor(
      'the card answered',
      async () => (await driver.findElements(By.css('[data-testid="approval-card"][data-state="pending"]'))).length === 0,
      20000,
    );
    await waitFor('the command ran', async () => fs.existsSync(marker), 20000);
    await screenshot(driver, 'away-card-answered-from-phone.png');
    const after = (await phone.ask({ messages: CHAT })).messages.find((m) => m.message_id === ask.message_id);
    assert.equal(after.buttons.length, 0, 'the phone lost its buttons');
    assert.match(after.text, /Allowed\.$/);
  });
});
