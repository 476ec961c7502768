// Room for the graph: side panels collapse (and start collapsed below
// 1100 px, opening over the canvas), and fitting a small graph keeps its
// text readable.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchBrowser, newPage, screenshot } from './lib/browser.mjs';
import { startStack } from './lib/stack.mjs';
import { assertNoPageErrors, openEditor, settle, TEST_TIMEOUT, tid, until } from './lib/ui.mjs';

let stack;
let browser;

before(async () => {
  stack = await startStack({ name: 'layout' });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await stack?.stop();
});

const width = async (page, sel) => (await page.locator(sel).first().boundingBox())?.width ?? 0;
const zoom = (page) =>
  page.locator('.react-flow__viewport').first().evaluate((e) => new DOMMatrixReadOnly(getComputedStyle(e).transform).a);

/** Seven nodes in a row, far apart: fitting all of them would shrink text. */
function wideGraph() {
  const ids = ['s', 'a', 'b', 'c', 'd', 'e', 'f'];
  return {
    nodes: ids.map((id, i) => ({
      id,
      type: i === 0 ? 'start' : 'agent',
      position: { x: i * 700, y: (i % 2) * 300 },
      data: i === 0 ? {} : { agentName: `Agent ${id}`, userPrompt: '{{PREVIOUS_OUTPUT}}' },
    })),
    edges: ids.slice(1).map((id, i) => ({ id: `e${i}`, source: ids[i], target: id, sourceHandle: 'output', targetHandle: 'input' })),
  };
}

test('side panels collapse and the canvas takes the room; the choice is remembered', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Wide', wideGraph());
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token });
  try {
    await openEditor(page, `/workflows/${wf.id}`);
    await page.locator(tid('left-panel')).waitFor();
    const before = await width(page, '.editor__canvas');
    await page.locator(tid('toggle-left-panel')).click();
    await page.locator(tid('left-panel')).waitFor({ state: 'detached' });
    await page.locator(tid('toggle-right-panel')).click();
    await page.locator(tid('tab-inspect')).waitFor({ state: 'detached' });
    const after = await width(page, '.editor__canvas');
    assert.ok(after > before + 500, `canvas ${before} → ${after} px`);
    await page.reload();
    await page.locator(tid('canvas')).waitFor();
    assert.equal(await page.locator(tid('left-panel')).count(), 0, 'still hidden after a reload');
    await page.locator(tid('toggle-left-panel')).click();
    await page.locator(tid('toggle-right-panel')).click();
    await page.locator(tid('left-panel')).waitFor();
    await page.locator(tid('tab-inspect')).waitFor();

    // Fit keeps a 7-node graph readable.
    await page.locator(tid('fit-view')).click();
    await settle(page);
    const z = await zoom(page);
    assert.ok(z >= 0.79, `fit zoom ${z} is below readable`);
    // A graph too wide to fit readably starts at its left: the start node shows.
    const startBox = await page.locator(tid("node-s")).boundingBox();
    const canvasBox = await page.locator(".editor__canvas").boundingBox();
    assert.ok(startBox.x >= canvasBox.x && startBox.x < canvasBox.x + 100, "the start node is at the left of the view");
    await screenshot(page, 'layout-fit-wide');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('below 1100 px the panels start hidden and open over the canvas', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Narrow', wideGraph());
  for (const theme of ['light', 'dark']) {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await page.setViewportSize({ width: 1000, height: 760 });
      await openEditor(page, `/workflows/${wf.id}`);
      assert.equal(await page.locator(tid('left-panel')).count(), 0);
      assert.equal(await page.locator(tid('tab-inspect')).count(), 0);
      const full = await width(page, '.editor__canvas');
      assert.ok(full >= 990, `canvas ${full} px of 1000`);
      await page.locator(tid('toggle-right-panel')).click();
      await page.locator(tid('tab-inspect')).waitFor();
      await until(async () => (await width(page, '.editor__canvas')) >= 990, 'the canvas keeps its width under the panel');
      await screenshot(page, `layout-narrow-${theme}`);
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});
