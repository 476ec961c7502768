// Seeing the whole graph: Fit (and the first view, and the run page) shows
// every node; at 1100 px panels push the canvas (Split view's text starts
// beside the left panel, not under it); YAML edges run around nodes, not
// behind them; `when:` and `trigger_rule` are drawn on steps and edges.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import { assertNoPageErrors, clickRun, nodeIds, openEditor, settle, TEST_TIMEOUT, tid, until, waitRunStatus } from './lib/ui.mjs';

/** 22 steps in layers: each of 7 layers feeds the next; a few long edges skip layers. */
function bigYaml() {
  const lines = ['name: Twenty-two steps', 'description: A wide layered DAG.', 'nodes:'];
  const ids = Array.from({ length: 22 }, (_, i) => `s${String(i + 1).padStart(2, '0')}`);
  const layerOf = (i) => (i === 0 ? 0 : Math.min(6, Math.ceil(i / 3.5)));
  ids.forEach((id, i) => {
    lines.push(`  - id: ${id}`);
    const deps = [];
    if (i > 0) {
      const prev = ids.filter((_, k) => layerOf(k) === layerOf(i) - 1);
      deps.push(prev[i % prev.length]);
    }
    if (i === 15) deps.push('s01'); // a long edge over five layers
    if (i === 9) deps.push('s01'); // a long edge into the when: step (short ones leave the words to the step)
    if (i === 21) deps.push('s02');
    if (deps.length) lines.push(`    depends_on: [${[...new Set(deps)].join(', ')}]`);
    if (i === 9) lines.push(`    when: "$${deps[0]}.output == '${deps[0]}'"`);
    if (i === 15) lines.push('    trigger_rule: one_success');
    lines.push(`    bash: echo ${id}`);
  });
  return `${lines.join('\n')}\n`;
}

let stack;
let browser;

useStack({ name: 'fit-routing', latency: '50ms', workflows: { 'big.yaml': bigYaml() } }, (s, b) => {
  stack = s;
  browser = b;
});

/** Ids of nodes whose box is not wholly inside the pane. */
async function outside(page, paneSel) {
  return page.evaluate((sel) => {
    const pane = document.querySelector(sel).getBoundingClientRect();
    return [...document.querySelectorAll('[data-node-type]')]
      .filter((el) => {
        const b = el.getBoundingClientRect();
        return b.left < pane.left - 1 || b.top < pane.top - 1 || b.right > pane.right + 1 || b.bottom > pane.bottom + 1;
      })
      .map((el) => el.getAttribute('data-testid'));
  }, paneSel);
}

/** Edges (curves and routes) whose drawn path passes through a node other than its own two. */
async function edgesThroughNodes(page) {
  return page.evaluate(() => {
    const nodes = [...document.querySelectorAll('.react-flow__node')].filter((el) => el.querySelector('[data-node-type]'));
    const rects = nodes.map((el) => ({ id: el.getAttribute('data-id'), r: el.getBoundingClientRect() }));
    const bad = [];
    for (const g of document.querySelectorAll('.react-flow__edge g[data-testid^="edge-"]')) {
      const path = g.querySelector('path.react-flow__edge-path');
      const edge = g.closest('.react-flow__edge');
      const [src, tgt] = (edge?.getAttribute('data-id') ?? g.getAttribute('data-testid').replace(/^edge-/, '')).split('->');
      const len = path.getTotalLength();
      const m = path.getScreenCTM();
      for (let d = 0; d <= len; d += 6) {
        const p = path.getPointAtLength(d);
        const x = m.a * p.x + m.c * p.y + m.e;
        const y = m.b * p.x + m.d * p.y + m.f;
        const hit = rects.find((n) => n.id !== src && n.id !== tgt && x > n.r.left + 2 && x < n.r.right - 2 && y > n.r.top + 2 && y < n.r.bottom - 2);
        if (hit) {
          bad.push(`${src}->${tgt} through ${hit.id}`);
          break;
        }
      }
    }
    return bad;
  });
}

const SIZES = [
  ['1440', { width: 1440, height: 900 }],
  ['1100', { width: 1100, height: 800 }],
];

test('a 22-step YAML workflow opens whole, its edges go around the steps, when: and trigger_rule are drawn', { timeout: TEST_TIMEOUT }, async () => {
  for (const theme of ['light', 'dark']) {
    for (const [w, size] of SIZES) {
      // The server's own layered layout again (the last round stored Auto-layout's positions).
      await stack.api.put('/api/workflows/yaml.big.yaml/positions', { positions: {} });
      const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
      try {
        await page.setViewportSize(size);
        await openEditor(page, '/workflows/yaml.big.yaml');
        await until(async () => (await nodeIds(page)).length === 22, '22 steps on the canvas');
        await settle(page);
        assert.deepEqual(await outside(page, tid('canvas')), [], 'every step is in view');
        // The long edges (s01 → s16, s02 → s22) would cross steps as curves: they are routed round them.
        await until(async () => (await page.locator('g[data-routed="true"]').count()) >= 2, 'edges routed round steps');
        assert.deepEqual(await edgesThroughNodes(page), [], 'no edge runs behind a step');
        // Auto-layout, then still all in view, and still no edge behind a step.
        await page.locator(tid('auto-layout')).click();
        await settle(page);
        assert.deepEqual(await outside(page, tid('canvas')), [], 'every step is in view after Auto-layout');
        assert.deepEqual(await edgesThroughNodes(page), [], 'no edge runs behind a step after Auto-layout');
        // when: and trigger_rule on the steps and on the edges into them.
        await page.locator(tid('node-when-s10')).waitFor({ state: 'attached' });
        await page.locator(tid('node-rule-s16')).waitFor({ state: 'attached' });
        const whenEdge = page.locator('g[data-when="true"]');
        assert.ok((await whenEdge.count()) >= 1, 'an edge into the when: step is marked');
        const labels = await page.$$eval('.sy-edge-label', (els) => els.map((e) => e.textContent));
        assert.ok(labels.some((l) => /^when \$/.test(l)), `a when label: ${JSON.stringify(labels)}`);
        assert.ok(labels.some((l) => /any one succeeds/.test(l)), `a trigger_rule label: ${JSON.stringify(labels)}`);
        await screenshot(page, `fit-yaml22-${theme}-${w}`);
        assertNoPageErrors(errors);
      } finally {
        await context.close();
      }
    }
  }
});

test('a finished run of it shows every step, at 1440 and 1100', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
  try {
    await openEditor(page, '/workflows/yaml.big.yaml');
    await until(async () => (await nodeIds(page)).length === 22, '22 steps');
    await until(async () => await page.locator(tid('run')).isEnabled(), 'Run enabled');
    await clickRun(page);
    await waitRunStatus(page, 'completed', 60_000);
    for (const [w, size] of SIZES) {
      await page.setViewportSize(size);
      await page.reload();
      await page.locator(tid('run-canvas')).waitFor();
      await until(async () => (await nodeIds(page)).length === 22, '22 steps on the run page');
      await settle(page);
      await until(async () => (await outside(page, tid('run-canvas'))).length === 0, `every step in view on the run page at ${w}`);
      await screenshot(page, `fit-run22-dark-${w}`);
    }
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('at 1100 px Split view starts beside the left panel, and the panels push the canvas', { timeout: TEST_TIMEOUT }, async () => {
  for (const theme of ['light', 'dark']) {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await page.setViewportSize({ width: 1100, height: 800 });
      await openEditor(page, '/workflows/yaml.big.yaml');
      await page.locator(tid('toggle-left-panel')).click();
      await page.locator(tid('left-panel')).waitFor();
      await page.locator(tid('yaml-view-split')).click();
      await page.locator(tid('yaml-pane')).waitFor();
      const left = await page.locator(tid('left-panel')).boundingBox();
      const pane = await page.locator(tid('yaml-pane')).boundingBox();
      const right = await page.locator('.side--right').boundingBox();
      const canvas = await page.locator(tid('canvas')).boundingBox();
      assert.ok(pane.x >= left.x + left.width - 1, `the text starts beside the left panel (${pane.x} vs ${left.x + left.width})`);
      assert.ok(canvas.x + canvas.width <= right.x + 1, 'the canvas ends where the details panel starts');
      await settle(page);
      await until(async () => (await outside(page, tid('canvas'))).length === 0, 'every step in view in the split canvas');
      await screenshot(page, `fit-split-1100-${theme}`);
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});
