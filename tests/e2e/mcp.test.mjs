// MCP through the real window (issue 21): the user pastes a Claude-Desktop-style config for
// @modelcontextprotocol/server-everything (from the repository's node_modules, installed from
// the lock; nothing is downloaded) into Settings → Tools, sees it running with its tools; the
// model calls `mcp__everything__echo`, the user approves it on a card that names the server,
// the tool and the arguments; the tool card shows them and the result, and the model's next
// request carries that result. Quitting ends the server: no orphan left.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Harness, ROOT, APP, alive, fill, messages, pidsWithEnv, quit, screenshot, send, By, waitFor } from './harness.mjs';

const SERVER = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const MESSAGE = 'hello from the fake model';
const CONFIG = JSON.stringify(
  { mcpServers: { everything: { command: 'node', args: [SERVER, 'stdio'] } } },
  null,
  2,
);

const LONG = 'mcp__everything__trigger-long-running-operation';

const h = new Harness();
let driver;

before(async () => {
  assert.ok(fs.existsSync(SERVER), `${SERVER} is missing: run \`npm install\` (make npm-deps) first`);
  await h.startFakeProvider({
    steps: [
      { kind: 'tool_calls', calls: [{ id: 'call_echo', name: 'mcp__everything__echo', arguments: { message: MESSAGE } }] },
      { kind: 'text', text: 'The server echoed it back.' },
      { kind: 'tool_calls', calls: [{ id: 'call_image', name: 'mcp__everything__get-tiny-image', arguments: {} }] },
      { kind: 'text', text: 'That is the MCP logo.' },
      // A minute's work: Node keeps the server alive for it even after its stdin closes.
      { kind: 'tool_calls', calls: [{ id: 'call_long', name: LONG, arguments: { duration: 60, steps: 2 } }] },
    ],
    fallback: { kind: 'text', text: 'HEARTBEAT_OK' },
  });
  await h.startDriver(h.providerEnv('anthropic', { VIGIL_APPROVAL_POLICY: 'ask' }));
  [driver] = await h.launchApp();
});

after(async () => {
  await quit(driver);
  await h.stop();
});

const text = (sel) => driver.executeScript(`return document.querySelector(${JSON.stringify(sel)})?.innerText ?? null`);
const serverSel = '[data-testid="mcp-server"][data-name="everything"]';
/** The server-everything processes this app started (found by the test's own data dir). */
const serverPids = () => pidsWithEnv('VIGIL_DATA_DIR', h.dataDir, 'server-everything');

test('a pasted Claude-Desktop config adds a server that runs and lists its tools', async () => {
  await driver.findElement(By.css('[data-testid="open-settings"]')).click();
  const section = await waitFor('the Tools section', async () => (await driver.findElements(By.css('[data-testid="mcp-paste"]')))[0], 10000);
  assert.match(await text('[data-testid="mcp-empty"]'), /No MCP server yet/);
  await driver.executeScript('arguments[0].scrollIntoView({ block: "center" })', section);
  await fill(driver, '[data-testid="mcp-paste"]', CONFIG);
  await driver.findElement(By.css('[data-testid="mcp-add"]')).click();

  await waitFor('the server running', async () => (await driver.executeScript(
    `return document.querySelector(${JSON.stringify(serverSel)})?.dataset.state`)) === 'running', 20000);
  const tools = await driver.executeScript(
    `return [...document.querySelectorAll(${JSON.stringify(`${serverSel} [data-testid="mcp-tool"] code`)})].map((e) => e.textContent)`,
  );
  assert.ok(tools.includes('echo'), `echo among its tools: ${tools}`);
  assert.equal(await text(`${serverSel} [data-testid="mcp-state"]`), `Running · ${tools.length} tools`);
  assert.equal(await driver.executeScript('return document.querySelector(\'[data-testid="mcp-paste"]\').value'), '', 'the field is emptied once added');
  assert.equal(serverPids().length, 1, 'one server process');

  // Kept in mcp.json in the data dir, in the shape that was pasted.
  const saved = JSON.parse(fs.readFileSync(path.join(h.dataDir, 'mcp.json'), 'utf8'));
  assert.deepEqual(saved.mcpServers.everything.args, [SERVER, 'stdio']);

  // Its tools unfolded, for the screenshot of what the user sees.
  await driver.executeScript(`const d = document.querySelector(${JSON.stringify(`${serverSel} details`)}); d.open = true;
    document.querySelector(${JSON.stringify(serverSel)}).scrollIntoView({ block: 'start' });`);
  await screenshot(driver, 'mcp-settings-tools.png');
  await driver.findElement(By.css('[data-testid="settings-close"]')).click();
});

test("the model calls the server's tool; the user approves it; the card and the next request carry the result", async () => {
  await send(driver, 'echo something through the server');

  const card = '[data-testid="approval-card"][data-state="pending"]';
  await waitFor('the approval card', async () => (await text(`${card} [data-testid="approval-mcp-tool"]`)) === 'echo', 15000);
  assert.equal(await text(`${card} [data-testid="approval-mcp-server"]`), 'everything');
  assert.deepEqual(JSON.parse(await text(`${card} [data-testid="approval-mcp-arguments"]`)), { message: MESSAGE });
  await screenshot(driver, 'mcp-approval-card.png');
  await driver.findElement(By.css(`${card} [data-testid="approval-approve"]`)).click();

  const tool = '[data-testid="tool-card"][data-tool-name="mcp__everything__echo"]';
  await waitFor('the tool card done', async () => (await driver.executeScript(
    `return document.querySelector(${JSON.stringify(tool)})?.dataset.status`)) === 'done', 15000);
  await waitFor('the answer', async () => (await messages(driver)).at(-1)?.text === 'The server echoed it back.', 15000);

  assert.equal(await text(`${tool} .name`), 'echo', 'the tool by its own name');
  assert.equal(await text(`${tool} [data-testid="tool-card-server"]`), 'everything', 'its server beside it');
  await driver.findElement(By.css(`${tool} .head`)).click();
  const body = await waitFor('the unfolded card', async () => text(`${tool} .body`), 5000);
  assert.match(body, /Arguments/);
  assert.match(body, new RegExp(`"message": "${MESSAGE}"`));
  assert.match(body, new RegExp(`Result\\s+Echo: ${MESSAGE}`));
  await driver.executeScript(`document.querySelector(${JSON.stringify(tool)}).scrollIntoView({ block: 'center' })`);
  await screenshot(driver, 'mcp-tool-card.png');

  const requests = h.fakeRequests().filter((r) => r.path === '/v1/messages' && r.body.messages.some((m) => m.role === 'user'));
  const offered = requests[0].body.tools.map((t) => t.name);
  assert.ok(offered.includes('mcp__everything__echo'), `the tool is offered to the model: ${offered}`);
  const results = requests
    .flatMap((r) => r.body.messages)
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((b) => b.type === 'tool_result' && b.tool_use_id === 'call_echo');
  assert.ok(results.length > 0, 'the next request carries the tool result');
  const content = typeof results[0].content === 'string' ? results[0].content : results[0].content.map((c) => c.text).join('');
  assert.equal(content, `Echo: ${MESSAGE}`);
  assert.notEqual(results[0].is_error, true);
});

test("an image the server's tool returns shows on its card and reaches the model as an image", async () => {
  await send(driver, 'show me the logo');
  const card = '[data-testid="approval-card"][data-state="pending"]';
  await waitFor('the approval card', async () => (await text(`${card} [data-testid="approval-mcp-tool"]`)) === 'get-tiny-image', 15000);
  await driver.findElement(By.css(`${card} [data-testid="approval-approve"]`)).click();
  await waitFor('the answer', async () => (await messages(driver)).at(-1)?.text === 'That is the MCP logo.', 15000);

  const tool = '[data-testid="tool-card"][data-tool-name="mcp__everything__get-tiny-image"]';
  const size = await waitFor('the image on the card', async () =>
    driver.executeScript(`const i = document.querySelector(${JSON.stringify(`${tool} [data-testid="image-thumb"] img`)});
      return i && i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight] : null;`), 10000);
  assert.deepEqual(size, [20, 20], 'the 20 px logo the server sent');
  await driver.executeScript(`document.querySelector(${JSON.stringify(tool)}).scrollIntoView({ block: 'center' })`);
  await screenshot(driver, 'mcp-tool-card-image.png');

  // The next request: the result's text and the image inside the tool_result, as base64 PNG.
  const result = h
    .fakeRequests()
    .flatMap((r) => r.body.messages ?? [])
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .find((b) => b.type === 'tool_result' && b.tool_use_id === 'call_image');
  assert.ok(result, 'the next request carries the tool result');
  assert.ok(Array.isArray(result.content), 'a list of blocks, as a result with an image needs');
  assert.match(result.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n'), /MCP logo/);
  const images = result.content.filter((b) => b.type === 'image');
  assert.equal(images.length, 1, 'one image block in the result');
  assert.equal(images[0].source.type, 'base64');
  assert.equal(images[0].source.media_type, 'image/png');
  // Stored once with the conversation, named by its hash.
  const sha256 = crypto.createHash('sha256').update(Buffer.from(images[0].source.data, 'base64')).digest('hex');
  assert.ok(fs.existsSync(path.join(h.dataDir, 'sessions', 'main.blobs', `${sha256}.png`)), 'the image is kept under sessions/main.blobs/');
});

test('quitting Vigil in the middle of a call leaves no server process behind', async () => {
  await send(driver, 'now something that takes a while');
  const card = '[data-testid="approval-card"][data-state="pending"]';
  await waitFor('the approval card', async () => (await text(`${card} [data-testid="approval-mcp-tool"]`)) === 'trigger-long-running-operation', 15000);
  await driver.findElement(By.css(`${card} [data-testid="approval-approve"]`)).click();
  await waitFor('the call running', async () => (await driver.executeScript(
    `return document.querySelector('[data-testid="tool-card"][data-tool-name="${LONG}"]')?.dataset.status`)) === 'running', 15000);

  const [server] = serverPids();
  assert.ok(server && alive(server), 'the server runs before the quit');
  const [app] = pidsWithEnv('VIGIL_DATA_DIR', h.dataDir, APP);
  assert.ok(app, 'this test’s app is found');
  // What the tray's Quit sends. The window goes with the app, so the call may not answer.
  await driver.executeScript('window.__TAURI_INTERNALS__.invoke("quit"); return true;').catch(() => {});
  await waitFor('the app to exit', async () => pidsWithEnv('VIGIL_DATA_DIR', h.dataDir, APP).length === 0, 15000);
  await waitFor('the server gone with it', async () => serverPids().length === 0, 5000);
  await quit(driver);
  driver = null;
});
