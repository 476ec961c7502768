// The YAML editor learns of disk changes from the server: the server
// watches its workflows folder and pushes workflow_changed over GET
// /api/ws, so an open file shows the reload banner without polling; a
// write from another tab is announced too, and the tab that wrote it shows
// nothing (its own hash); a deleted file gets its own banner.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import { assertNoPageErrors, nodeIds, openEditor, TEST_TIMEOUT, textMatches, tid, until } from './lib/ui.mjs';

const SHARED_YAML = `name: Pushed file
description: Changed on disk while open.
nodes:
  - id: one
    bash: echo one
  - id: two
    depends_on: [one]
    bash: echo two
`;

let stack;
let browser;

useStack({ name: 'yaml-push', latency: '100ms', workflows: { 'pushed.yaml': SHARED_YAML, 'doomed.yaml': SHARED_YAML.replace('Pushed file', 'Doomed file') } }, (s, b) => {
  stack = s;
  browser = b;
});

const wfFile = (name) => join(stack.dataDir, 'workflows', name);
const sha = (text) => createHash('sha256').update(text).digest('hex');

/** Replaces a file the way editors and git do: never seen half written. */
function writeAtomically(name, text) {
  const tmp = wfFile(`.${name}.tmp`);
  writeFileSync(tmp, text);
  renameSync(tmp, wfFile(name));
}

/** Records the workflow_changed messages the page's GET /api/ws receives. */
function recordPushes(page) {
  const pushes = [];
  const sockets = [];
  page.on('websocket', (ws) => {
    if (!ws.url().endsWith('/api/ws')) return;
    sockets.push(ws);
    ws.on('framereceived', (f) => {
      try {
        const m = JSON.parse(String(f.payload));
        if (m.type === 'workflow_changed') pushes.push(m);
      } catch {
        /* not JSON */
      }
    });
  });
  return { pushes, sockets };
}

async function openYaml(page, name) {
  const list = await stack.api.get('/api/workflows');
  const wf = list.find((w) => w.kind === 'yaml' && w.name === name);
  assert.ok(wf, `the server lists ${name}`);
  await openEditor(page, `/workflows/${encodeURIComponent(wf.id)}`);
  await page.locator(tid('yaml-view-canvas')).waitFor();
  await until(async () => (await nodeIds(page)).length > 0, 'the steps on the canvas');
  return wf;
}

test('a disk change is pushed: the banner appears without polling; another tab’s write is announced, and not to the tab that wrote it', { timeout: TEST_TIMEOUT }, async () => {
  writeAtomically('pushed.yaml', SHARED_YAML);
  const a = await newPage(browser, { baseURL: stack.baseURL, token: stack.token });
  try {
    const pa = recordPushes(a.page);
    const wf = await openYaml(a.page, 'Pushed file');
    await until(() => pa.sockets.length > 0, 'tab A follows GET /api/ws');
    // Pushed, so not polled: the 3 s poll runs only while the socket is down.
    await until(async () => (await a.page.evaluate(() => document.documentElement.dataset.diskWatch)) === 'push', 'tab A relies on the push');

    // Changed on disk: pushed, and the banner follows the push.
    const fromDisk = SHARED_YAML.replace('echo one', 'echo one-from-disk');
    writeAtomically('pushed.yaml', fromDisk);
    await until(() => pa.pushes.some((m) => m.id === wf.id && m.hash === sha(fromDisk)), 'the push of the disk change', 30_000);
    await textMatches(a.page.locator(tid('yaml-disk-change')), /pushed\.yaml changed on disk/, 'the banner after the push', 30_000);
    await screenshot(a.page, 'yaml-push-banner');
    await a.page.locator(tid('yaml-disk-reload')).click();
    await a.page.locator(tid('yaml-disk-change')).waitFor({ state: 'detached' });

    // A second tab writes the file (typed text, Ctrl+S): tab A learns of
    // it; tab B, which wrote it, shows no banner.
    const b = await a.context.newPage();
    const bErrors = [];
    b.on('pageerror', (e) => bErrors.push(e));
    b.on('dialog', (d) => void d.accept());
    const pb = recordPushes(b);
    await openYaml(b, 'Pushed file');
    await until(() => pb.sockets.length > 0, 'tab B follows GET /api/ws');
    await b.locator(tid('yaml-view-text')).click();
    await b.locator(tid('yaml-text')).click();
    await b.keyboard.press('Control+End');
    await b.keyboard.insertText('  - id: three\n    bash: echo three\n');
    await b.keyboard.press('Control+s');
    const written = await until(() => {
      const m = pb.pushes.find((p) => p.id === wf.id && p.hash !== sha(fromDisk));
      return m?.hash;
    }, 'the push of tab B’s write', 30_000);
    await textMatches(a.page.locator(tid('yaml-disk-change')), /pushed\.yaml changed on disk/, 'tab A learns of tab B’s write', 30_000);
    await until(() => pa.pushes.some((m) => m.hash === written), 'tab A got the same push');
    // Tab A's banner needed a GET after the push; tab B had the same push
    // as long: a banner for its own write would be there by now. Watch it
    // a little longer still.
    for (let i = 0; i < 20; i++) {
      assert.equal(await b.locator(tid('yaml-disk-change')).count(), 0, 'tab B shows no banner for its own write');
      await new Promise((r) => setTimeout(r, 100));
    }
    assertNoPageErrors(a.errors);
    assertNoPageErrors(bErrors);
  } finally {
    await a.context.close();
  }
});

test('a deleted file is pushed: the banner says so', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token });
  try {
    const p = recordPushes(page);
    const wf = await openYaml(page, 'Doomed file');
    await until(() => p.sockets.length > 0, 'the page follows GET /api/ws');
    rmSync(wfFile('doomed.yaml'));
    await until(() => p.pushes.some((m) => m.id === wf.id && m.deleted === true), 'the push of the deletion', 30_000);
    await textMatches(page.locator(tid('yaml-disk-change')), /doomed\.yaml was deleted on disk/, 'the deletion banner', 30_000);
    await page.locator(tid('yaml-disk-dismiss')).click();
    await page.locator(tid('yaml-disk-change')).waitFor({ state: 'detached' });
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});
