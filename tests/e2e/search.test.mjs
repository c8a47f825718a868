// Issue 35: the user's search over every conversation and job, through the real window.
// Three conversations and a routine's job say different things; Ctrl+K and typing find each
// in its place with the matched word highlighted, and choosing a result opens that
// conversation scrolled to that message, outlined. Screenshots of both moments.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Key } from 'selenium-webdriver';
import { Harness, fill, messages, quit, screenshot, send, By, waitFor } from './harness.mjs';

const h = new Harness();
let driver;

/** A session's metadata in its checksummed envelope, as Vigil writes it. */
function meta(id, title, type, ts) {
  const m = JSON.stringify({ id, title, session_type: type, revision: 1, created_at: ts, updated_at: ts });
  const sum = crypto.createHash('sha256').update(m).digest('hex');
  return `{"checksum":"sha256:${sum}","meta":${m}}`;
}

function transcript(texts, t0) {
  return (
    texts
      .map((text, i) =>
        JSON.stringify(
          i % 2 === 0
            ? { role: 'user', content: [{ type: 'text', text }], ts: t0 + i * 60_000 }
            : { role: 'assistant', content: [{ type: 'text', text }], ts: t0 + i * 60_000, model: 'fake-model', stop_reason: 'end_turn' },
        ),
      )
      .join('\n') + '\n'
  );
}

const T0 = Date.now() - 7 * 86_400_000;
/** The trip conversation: long, so the message with the word is far above the bottom. */
const TRIP = Array.from({ length: 60 }, (_, i) =>
  i === 9 ? 'Pack the marmalade from the farm shop, the orange one.' : `Planning note ${i}: trains, times and tickets for the trip.`,
);

/**
 * The garden conversation: 40 lines as Vigil writes them (each with its id first), all of one
 * millisecond (imported at once), so only the id tells them apart. Message 30 has the word.
 */
const GARDEN_ID = 'chat_garden0001';
const GARDEN_FILE = () => path.join(h.dataDir, 'sessions', `${GARDEN_ID}.jsonl`);
const T_GARDEN = T0 + 5 * 3_600_000;
const GARDEN = Array.from({ length: 40 }, (_, i) => {
  const text = i === 30 ? 'Cut the rhubarb stalks at the base, never with a knife.' : `Garden note ${i}: watering, weeding and the compost.`;
  const id = `m${crypto.createHash('sha256').update(`garden ${i}`).digest('hex').slice(0, 16)}`;
  const body = i % 2 === 0 ? { role: 'user', content: [{ type: 'text', text }] } : { role: 'assistant', content: [{ type: 'text', text }], model: 'fake-model', stop_reason: 'end_turn' };
  return JSON.stringify({ id, ...body, ts: T_GARDEN }) + '\n';
});

before(async () => {
  const dir = path.join(h.dataDir, 'sessions');
  fs.mkdirSync(dir);
  const sessions = [
    ['chat_trip000001', 'Trip planning', 'primary', TRIP],
    ['chat_build00001', 'Build failures', 'primary', ['Why does the linker fail?', 'It needs the zanzibar flag.']],
    ['chat_quokka0001', 'Animals', 'primary', ['Tell me about the quokka.', 'A small marsupial from Rottnest Island.']],
    ['job_disk_check_1', 'Disk check', 'job', ['Check the disk.', 'Root is at 91%, the gorgonzola volume at 40%.']],
  ];
  sessions.forEach(([id, title, type, texts], n) => {
    fs.writeFileSync(path.join(dir, `${id}.jsonl`), transcript(texts, T0 + n * 3_600_000));
    fs.writeFileSync(path.join(dir, `${id}.meta.json`), meta(id, title, type, T0 + n * 3_600_000));
  });
  fs.writeFileSync(GARDEN_FILE(), GARDEN.join(''));
  fs.writeFileSync(path.join(dir, `${GARDEN_ID}.meta.json`), meta(GARDEN_ID, 'Garden log', 'primary', T0 + 5 * 3_600_000));
  await h.startFakeProvider({ steps: [], fallback: { kind: 'text', text: 'Noted.' } });
  await h.startDriver(h.providerEnv('anthropic'));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const ctrl = (key) => driver.actions().keyDown(Key.CONTROL).sendKeys(key).keyUp(Key.CONTROL).perform();
const hits = () =>
  driver.executeScript(`return [...document.querySelectorAll('[data-testid="history-hit"]')].map((b) => ({
    session: b.dataset.sessionId,
    text: b.innerText,
    marked: [...b.querySelectorAll('mark')].map((m) => m.textContent),
  }));`);

async function search(words) {
  await fill(driver, '[data-testid="history-search"]', words);
  // The previous query's results stay until this one's answer: wait for marks of these words.
  const first = words.split(' ')[0].toLowerCase();
  return waitFor(`results for ${words}`, async () => {
    const found = await hits();
    const answered = found.length > 0 && found.every((f) => f.marked.some((m) => m.toLowerCase().startsWith(first)));
    return answered ? found : null;
  });
}

test('Ctrl+K finds each conversation and the job by its own words, highlighted', async () => {
  await ctrl('k');
  await waitFor('the search box focused', async () =>
    driver.executeScript('return document.activeElement?.dataset.testid === "history-search";'),
  );
  for (const [words, session, marked] of [
    ['zanzib', 'chat_build00001', 'zanzibar'],
    ['quokka', 'chat_quokka0001', 'quokka'],
    ['gorgonzola', 'job_disk_check_1', 'gorgonzola'],
  ]) {
    const found = await search(words);
    assert.deepEqual(
      found.map((f) => f.session),
      [session],
      `${words}: ${JSON.stringify(found)}`,
    );
    assert.deepEqual(found[0].marked, [marked]);
  }
  const found = await search('marmal');
  assert.equal(found.length, 1, JSON.stringify(found));
  assert.match(found[0].text, /Trip planning/);
  assert.deepEqual(found[0].marked, ['marmalade']);
  await screenshot(driver, 'search-results.png');
});

test('choosing a result opens its conversation at that message, outlined', async () => {
  await driver.findElement(By.css('[data-testid="history-hit"]')).click();
  const shown = await waitFor('the message with the word, outlined and in view', async () =>
    driver.executeScript(`
      const m = [...document.querySelectorAll('[data-testid="message"]')].find((e) => e.innerText.includes('marmalade'));
      if (!m || !m.classList.contains('highlight')) return null;
      const r = m.getBoundingClientRect();
      return r.top >= 0 && r.bottom <= window.innerHeight ? { top: r.top, last: document.querySelector('[data-testid="message"]:last-of-type')?.innerText } : null;`),
  );
  assert.ok(shown, 'the message is in view');
  // Far above the bottom: the view scrolled to it rather than staying at the latest message.
  const lastVisible = await driver.executeScript(`
    const all = [...document.querySelectorAll('[data-testid="message"]')];
    const last = all[all.length - 1];
    const r = last.getBoundingClientRect();
    return r.top < window.innerHeight && r.bottom > 0;`);
  assert.equal(lastVisible, false, 'the latest message is out of view');
  await screenshot(driver, 'search-opened.png');
});

test('a result opens at its own message after earlier lines were pruned, where its place now names another', async () => {
  // The garden conversation open in the window, as loaded: 40 messages. (The search box
  // emptied first: while it has words, the sidebar shows results instead of conversations.)
  await fill(driver, '[data-testid="history-search"]', '');
  const garden = By.css(`[data-testid="session-item"][data-session-id="${GARDEN_ID}"] button.select`);
  await waitFor('the garden conversation listed', async () => (await driver.findElements(garden)).length === 1 && driver.findElement(garden).isDisplayed());
  await driver.findElement(garden).click();
  await waitFor('the garden conversation shown', async () => (await messages(driver)).some((m) => m.text.includes('Garden note 39')));
  // Its first ten lines pruned on disk (by another tool) while it is open: the rhubarb line
  // moves from place 30 to place 20, where the window still shows "Garden note 20", of the
  // same millisecond. A place checked by its time would open that one.
  fs.writeFileSync(GARDEN_FILE(), GARDEN.slice(10).join(''));
  // A turn in it: the index catches up with the transcript as it now is.
  const replies = (await messages(driver)).filter((m) => m.text === 'Noted.').length;
  await send(driver, 'Done with the garden for today.');
  await waitFor('the reply', async () => (await messages(driver)).filter((m) => m.text === 'Noted.').length > replies);

  const found = await search('rhubarb');
  assert.equal(found.length, 1, JSON.stringify(found));
  assert.match(found[0].text, /Garden log/);
  await driver.findElement(By.css('[data-testid="history-hit"]')).click();
  const outlined = await waitFor('a message outlined and in view', async () =>
    driver.executeScript(`
      const m = document.querySelector('[data-testid="message"].highlight');
      if (!m) return null;
      const r = m.getBoundingClientRect();
      return r.top >= 0 && r.bottom <= window.innerHeight ? m.innerText : null;`),
  );
  assert.match(outlined, /rhubarb/, `the outlined message is the result's own: ${outlined}`);
  await screenshot(driver, 'search-opened-pruned.png');
});
