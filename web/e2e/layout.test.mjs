// Room for the graph: side panels collapse (the left one starts collapsed
// below 1280 px), never cover the canvas (an open panel takes its room
// from it), and Fit shows the whole graph.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import { assertNoPageErrors, openEditor, settle, TEST_TIMEOUT, tid, until } from './lib/ui.mjs';

let stack;
let browser;

useStack({ name: 'layout' }, (s, b) => {
  stack = s;
  browser = b;
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

    // Fit shows all 7 nodes of a graph wider than the view.
    await page.locator(tid('fit-view')).click();
    await settle(page);
    const z = await zoom(page);
    assert.ok(z < 0.8, `fit zoom ${z}: the graph is wider than the view at a readable zoom`);
    const canvasBox = await page.locator('.editor__canvas').boundingBox();
    for (const id of ['s', 'a', 'b', 'c', 'd', 'e', 'f']) {
      const nb = await page.locator(tid(`node-${id}`)).boundingBox();
      assert.ok(
        nb.x >= canvasBox.x && nb.x + nb.width <= canvasBox.x + canvasBox.width && nb.y >= canvasBox.y && nb.y + nb.height <= canvasBox.y + canvasBox.height,
        `node ${id} is inside the canvas after Fit`,
      );
    }
    await screenshot(page, 'layout-fit-wide');
    // Auto-layout fits the result: still every node in view.
    await page.locator(tid('auto-layout')).click();
    await settle(page);
    const laidOut = await page.locator('.editor__canvas').boundingBox();
    for (const id of ['s', 'a', 'b', 'c', 'd', 'e', 'f']) {
      const nb = await page.locator(tid(`node-${id}`)).boundingBox();
      assert.ok(nb.x >= laidOut.x && nb.x + nb.width <= laidOut.x + laidOut.width, `node ${id} is in view after Auto-layout`);
    }
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('at 1100 px the left panel starts collapsed and open panels push the canvas instead of covering it', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Narrow', wideGraph());
  for (const theme of ['light', 'dark']) {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await page.setViewportSize({ width: 1100, height: 800 });
      await openEditor(page, `/workflows/${wf.id}`);
      assert.equal(await page.locator(tid('left-panel')).count(), 0, 'the left panel starts collapsed');
      await page.locator(tid('tab-inspect')).waitFor();
      const box = async (sel) => page.locator(sel).first().boundingBox();
      let canvas = await box('.editor__canvas');
      let right = await box('.side--right');
      assert.ok(canvas.x + canvas.width <= right.x + 1, 'the details panel is beside the canvas, not over it');
      await page.locator(tid('toggle-left-panel')).click();
      await page.locator(tid('left-panel')).waitFor();
      canvas = await box('.editor__canvas');
      right = await box('.side--right');
      const left = await box(tid('left-panel'));
      assert.ok(left.x + left.width <= canvas.x + 1, 'the left panel is beside the canvas, not over it');
      assert.ok(canvas.x + canvas.width <= right.x + 1, 'and so is the right one');
      await until(async () => (await box('.editor__canvas')).width >= 1100 - left.width - right.width - 4, 'the canvas takes the rest');
      await screenshot(page, `layout-1100-${theme}`);
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});
