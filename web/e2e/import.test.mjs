// Importing a legacy AgentFlow graph through the editor's Import button:
// the server's normalizer turns the `input` node into an approval node and
// `connections` into edges.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { launchBrowser, newPage, screenshot } from './lib/browser.mjs';
import { SHARED_DIR, startStack } from './lib/stack.mjs';
import {
  assertNoPageErrors,
  nodeIds,
  openEditor,
  saveNew,
  TEST_TIMEOUT,
  textMatches,
  tid,
  until,
  waitRunnable,
} from './lib/ui.mjs';

const fixture = join(SHARED_DIR, 'fixtures', 'agentflow', 'legacy-input-node.json');
const skip = existsSync(fixture) ? false : `shared fixtures absent (${fixture})`;

let stack;
let browser;

before(async () => {
  if (skip) return;
  stack = await startStack({ name: 'import', latency: '300ms' });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await stack?.stop();
});

test('importing a legacy graph shows it normalized (approval node, edges) and saves it', { skip, timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await openEditor(page, '/workflows/new');
    await page.locator(tid('import-file')).setInputFiles(fixture);
    await until(async () => (await nodeIds(page)).length === 5, 'five imported nodes');
    assert.deepEqual((await nodeIds(page)).sort(), ['node_1', 'node_2', 'node_3', 'node_4', 'node_5']);
    await textMatches(page.locator(tid('toasts')), /Converted from the legacy format/, 'import toast');

    // The legacy `input` node is an approval node with approve/reject handles.
    const approval = page.locator(tid('node-node_3'));
    assert.equal(await approval.getAttribute('data-node-type'), 'approval');
    assert.match(await approval.textContent(), /Publish this poem\?/);
    for (const h of ['approve', 'reject']) {
      assert.equal(await approval.locator(`.react-flow__handle[data-handleid="${h}"]`).count(), 1, `handle ${h}`);
    }
    assert.equal(await page.locator(tid('node-node_2')).getAttribute('data-node-type'), 'agent');
    assert.match(await page.locator(tid('node-node_2')).textContent(), /Poet/);

    // `connections` became four edges on the right handles.
    const edges = await page.$$eval('.react-flow__edge', (els) => els.map((e) => e.getAttribute('data-id') ?? e.getAttribute('data-testid')));
    assert.equal(edges.length, 4, `four edges drawn: ${JSON.stringify(edges)}`);
    for (const id of ['e-node_1-output-node_2', 'e-node_2-output-node_3', 'e-node_3-approve-node_4', 'e-node_3-reject-node_5']) {
      await page.locator(tid(`edge-${id}`)).waitFor({ state: 'attached' });
    }
    // Legacy positions were made for smaller boxes: nothing may overlap.
    await textMatches(page.locator(tid('toasts')), /arranged automatically/, 'the re-arrange note');
    const boxes = await page.$$eval('.react-flow__node', (els) => els.map((e) => e.getBoundingClientRect().toJSON()));
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i];
        const b = boxes[j];
        const apart = a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
        assert.ok(apart, `imported nodes ${i} and ${j} do not overlap`);
      }
    }
    await waitRunnable(page);
    await screenshot(page, 'import-legacy-light');

    await page.locator(tid('workflow-name')).fill('Imported poem');
    const id = await saveNew(page);
    const wf = await stack.api.get(`/api/workflows/${id}`);
    assert.equal(wf.graph.nodes.find((n) => n.id === 'node_3').type, 'approval');
    assert.deepEqual(
      wf.graph.edges.map((e) => `${e.source}.${e.sourceHandle}>${e.target}.${e.targetHandle}`).sort(),
      ['node_1.output>node_2.input', 'node_2.output>node_3.input', 'node_3.approve>node_4.input', 'node_3.reject>node_5.input'],
    );
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});
