// Images through the real window (issue 21): a 3000×2000 PNG pasted into the message box
// waits as a thumbnail (a second one is removed with ×), goes with the text, shows in the
// sent message as a thumbnail that opens full size in a lightbox; the model receives it as
// an Anthropic `image` block scaled to 1568 px on its long side; the conversation keeps it
// once as a file named by its hash, and the transcript line names it without its bytes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, messages, quit, screenshot, send, By, waitFor } from './harness.mjs';

const h = new Harness();
let driver;
const QUESTION = 'What is in this picture?';
const ANSWER = 'A gradient from blue to orange, with a white square.';

before(async () => {
  await h.startFakeProvider({ steps: [{ kind: 'text', text: ANSWER }], fallback: { kind: 'echo' } });
  await h.startDriver(h.providerEnv('anthropic'));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

/** A PNG made with ImageMagick, as `{ name, base64 }`. */
function png(name, ...args) {
  const file = path.join(h.dataDir, name);
  execFileSync('convert', [...args, '-depth', '8', file]);
  return { name, base64: fs.readFileSync(file).toString('base64') };
}

/** Pastes `files` into the message box, as a screenshot from the clipboard arrives. */
function paste(files) {
  return driver.executeScript(
    `const dt = new DataTransfer();
     for (const { name, base64 } of arguments[0]) {
       const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
       dt.items.add(new File([bytes], name, { type: 'image/png' }));
     }
     const event = new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true });
     document.querySelector('[data-testid="chat-input"]').dispatchEvent(event);
     return event.defaultPrevented;`,
    files,
  );
}

const drafts = () =>
  driver.executeScript('return [...document.querySelectorAll(\'[data-testid="composer-image"] img\')].map((i) => i.alt)');

/** Width and height from a PNG's IHDR chunk. */
function pngSize(bytes) {
  assert.equal(bytes.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'a PNG signature');
  assert.equal(bytes.subarray(12, 16).toString('latin1'), 'IHDR');
  return [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
}

test('a pasted image waits as a removable thumbnail, is sent downscaled, and opens full size', async () => {
  const chart = png('chart.png', '-size', '3000x2000', 'gradient:#1e6bd6-#f2b134', '-fill', 'white', '-draw', 'rectangle 1200,700 1800,1300');
  const extra = png('extra.png', '-size', '200x100', 'xc:#c0392b');
  assert.equal(await paste([chart, extra]), true, 'the composer takes the pasted files');
  await waitFor('two thumbnails', async () => (await drafts()).length === 2, 5000);
  assert.deepEqual(await drafts(), ['chart.png', 'extra.png']);

  await driver.findElement(By.css('[data-testid="remove-image"][aria-label="Remove extra.png"]')).click();
  await waitFor('one thumbnail left', async () => (await drafts()).length === 1, 5000);
  assert.deepEqual(await drafts(), ['chart.png']);
  await screenshot(driver, 'images-composer.png');

  await send(driver, QUESTION);
  await waitFor('the answer', async () => (await messages(driver)).at(-1)?.text === ANSWER, 20000);
  assert.deepEqual(await drafts(), [], 'the composer is empty once sent');

  // The sent message: the text and the image's thumbnail.
  const user = '[data-testid="message"][data-role="user"]';
  const thumb = await waitFor('the thumbnail in the message', async () =>
    (await driver.findElements(By.css(`${user} [data-testid="image-thumb"]`)))[0], 10000);
  assert.equal((await messages(driver)).find((m) => m.role === 'user')?.text, QUESTION);
  await screenshot(driver, 'images-chat-thumbnail.png');

  await thumb.click();
  const size = await waitFor('the image at full size', async () =>
    driver.executeScript(`const i = document.querySelector('[data-testid="lightbox"] [data-testid="lightbox-image"]');
      return i && i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight] : null;`), 10000);
  assert.deepEqual(size, [1568, 1045], 'the stored image, scaled to 1568 px on its long side');
  await screenshot(driver, 'images-lightbox.png');
  await driver.findElement(By.css('[data-testid="chat-input"]')).sendKeys('\uE00C'); // Escape
  await waitFor('the lightbox closed', async () => (await driver.findElements(By.css('[data-testid="lightbox"]'))).length === 0, 5000);

  // What the model received: an Anthropic image block, base64 PNG, at most 1568 px.
  const request = h.fakeRequests().find((r) => r.path === '/v1/messages' && JSON.stringify(r.body).includes(QUESTION));
  const blocks = request.body.messages.filter((m) => m.role === 'user').flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  const images = blocks.filter((b) => b.type === 'image');
  assert.equal(images.length, 1, 'one image block');
  assert.equal(images[0].source.type, 'base64');
  assert.equal(images[0].source.media_type, 'image/png');
  const sent = Buffer.from(images[0].source.data, 'base64');
  assert.deepEqual(pngSize(sent), [1568, 1045]);
  const decoded = path.join(h.dataDir, 'sent.png');
  fs.writeFileSync(decoded, sent);
  assert.equal(execFileSync('identify', ['-format', '%w %h %m', decoded]).toString(), '1568 1045 PNG', 'ImageMagick decodes it');

  // Kept once, as a file named by its hash; the transcript names it and holds no bytes.
  const sha256 = crypto.createHash('sha256').update(sent).digest('hex');
  const blobs = path.join(h.dataDir, 'sessions', 'main.blobs');
  assert.deepEqual(fs.readdirSync(blobs), [`${sha256}.png`]);
  assert.ok(fs.readFileSync(path.join(blobs, `${sha256}.png`)).equals(sent), 'the blob is the image sent');
  const line = fs.readFileSync(path.join(h.dataDir, 'sessions', 'main.jsonl'), 'utf8').split('\n').find((l) => l.includes(QUESTION));
  assert.ok(!line.includes(images[0].source.data.slice(0, 64)), 'no base64 in the transcript');
  assert.ok(line.length < 1000, `a short line (${line.length} chars)`);
  assert.deepEqual(JSON.parse(line).content.find((b) => b.type === 'image'), { type: 'image', sha256, mime: 'image/png' });
});

test('a damaged PNG is refused at the message box with its name, and nothing is sent', async () => {
  const whole = png('whole.png', '-size', '800x600', 'plasma:fractal', '-seed', '7');
  // Cut short: the header and the first rows, not the rest.
  const cut = { name: 'cut-short.png', base64: Buffer.from(whole.base64, 'base64').subarray(0, 4000).toString('base64') };
  const requestsBefore = h.fakeRequests().length;
  const shownBefore = (await messages(driver)).length;

  assert.equal(await paste([cut]), true);
  await waitFor('its thumbnail', async () => (await drafts()).length === 1, 5000);
  await send(driver, 'and this one?');
  const error = await waitFor('the refusal', async () => driver.executeScript(
    'return document.querySelector(\'[data-testid="composer-error"]\')?.innerText ?? null'), 10000);
  assert.match(error, /cut-short\.png could not be read as a PNG image \(the file may be damaged or cut short\)/);
  // The message comes back to be fixed: its text and its image.
  await waitFor('the message back in the box', async () => (await driver.executeScript(
    'return document.querySelector(\'[data-testid="chat-input"]\').value')) === 'and this one?', 5000);
  assert.deepEqual(await drafts(), ['cut-short.png']);
  await screenshot(driver, 'images-damaged.png');
  assert.equal(h.fakeRequests().length, requestsBefore, 'nothing reached the model');
  assert.equal((await messages(driver)).length, shownBefore, 'nothing was added to the conversation');
  assert.deepEqual(fs.readdirSync(path.join(h.dataDir, 'sessions', 'main.blobs')).length, 1, 'nothing stored');
});
