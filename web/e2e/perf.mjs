#!/usr/bin/env node
// Opt-in performance check (`npm run perf:web`): a 1,000-node workflow in
// the editor, in headless Chromium against the real server. Reports
// figures; asserts only that nothing froze (loose bounds, a busy 2-core
// machine must not fail it).
//
//   open   navigation start → every node rendered and measured
//   pan    requestAnimationFrame count while the pane is dragged for ~2 s,
//          at the fitted zoom (all nodes on screen) and at zoom ~1 (only
//          visible nodes rendered)
//
// SWITCHYARD_PERF_NODES changes the size (default 1000); SWITCHYARD_PERF_CSS
// adds a style sheet after opening, to find what costs (e.g.
// '.react-flow__edges{display:none}').
import assert from 'node:assert/strict';
import { launchBrowser, chromiumAvailable, CHROMIUM, newPage, screenshot } from './lib/browser.mjs';
import { startStack } from './lib/stack.mjs';
import { openEditor, settle, tid, until } from './lib/ui.mjs';

const N = Number(process.env.SWITCHYARD_PERF_NODES ?? 1000);

if (!chromiumAvailable()) {
  console.log(`perf: SKIPPED: ${CHROMIUM} not found`);
  process.exit(0);
}

/** start + N-1 agents in rows of 20: each row a chain, each row fed by start. */
function bigGraph(n) {
  const cols = 20;
  const nodes = [{ id: 'start', type: 'start', position: { x: -320, y: 0 }, data: { initialInput: 'x' } }];
  const edges = [];
  for (let i = 0; i < n - 1; i++) {
    const r = Math.floor(i / cols);
    const c = i % cols;
    const id = `a${i}`;
    nodes.push({ id, type: 'agent', position: { x: c * 320, y: r * 150 }, data: { agentName: `Agent ${i}`, userPrompt: '{{PREVIOUS_OUTPUT}}' } });
    const source = c === 0 ? 'start' : `a${i - 1}`;
    edges.push({ id: `e${i}`, source, target: id, sourceHandle: 'output', targetHandle: 'input' });
  }
  return { nodes, edges };
}

/** Drags the empty pane for about durationMs while counting frames in the page. */
async function measurePan(page, durationMs = 2000) {
  const box = await page.locator(tid('canvas')).boundingBox();
  // An empty spot of the pane (a node there would be dragged instead).
  const spot = await page.evaluate((b) => {
    for (let y = b.y + 40; y < b.y + b.height - 40; y += 7) {
      for (let x = b.x + 60; x < b.x + b.width - 220; x += 7) {
        const el = document.elementFromPoint(x, y);
        if (el?.classList.contains('react-flow__pane')) return { x, y };
      }
    }
    return null;
  }, box);
  assert.ok(spot, 'found an empty spot of the pane to drag');
  await page.evaluate(() => {
    const w = window;
    w.__perf = { frames: 0, gaps: [], last: 0, stop: false, longTasks: [] };
    try {
      const po = new PerformanceObserver((l) => {
        for (const e of l.getEntries()) w.__perf.longTasks.push(e.duration);
      });
      po.observe({ type: 'longtask', buffered: false });
      w.__perf.po = po;
    } catch {
      /* no long task API */
    }
    const tick = (t) => {
      const p = w.__perf;
      if (p.stop) return;
      if (p.last) p.gaps.push(t - p.last);
      p.last = t;
      p.frames++;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  const t0 = Date.now();
  await page.mouse.move(spot.x, spot.y);
  await page.mouse.down();
  let i = 0;
  while (Date.now() - t0 < durationMs) {
    // A slow circle-ish path so the view moves the whole time.
    const a = (i++ / 30) * Math.PI;
    await page.mouse.move(spot.x + Math.sin(a) * 150, spot.y + (1 - Math.cos(a)) * 100, { steps: 2 });
  }
  await page.mouse.up();
  const elapsed = Date.now() - t0;
  const r = await page.evaluate(() => {
    const p = window.__perf;
    p.stop = true;
    p.po?.disconnect();
    const gaps = p.gaps.slice().sort((a, b) => a - b);
    return {
      frames: p.frames,
      maxGapMs: gaps.length ? gaps[gaps.length - 1] : 0,
      p95GapMs: gaps.length ? gaps[Math.floor(gaps.length * 0.95)] : 0,
      longTasks: p.longTasks.length,
      longestTaskMs: p.longTasks.length ? Math.max(...p.longTasks) : 0,
    };
  });
  return { ...r, moves: i, elapsedMs: elapsed, fps: (r.frames / elapsed) * 1000 };
}

const stack = await startStack({ name: 'perf', latency: '0s' });
const browser = await launchBrowser();
try {
  const t0 = Date.now();
  const wf = await stack.api.createWorkflow(`Big ${N}`, bigGraph(N));
  console.log(`perf: saved a ${N}-node workflow in ${Date.now() - t0} ms`);
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, theme: 'light' });

  // Warm the browser cache with the app bundle so "open" measures the graph.
  await openEditor(page, '/workflows/new');
  await page.goto(`/workflows/${wf.id}`);
  const openMs = await page.evaluate(async (n) => {
    const done = () => {
      const els = document.querySelectorAll('.react-flow__node');
      if (els.length < n) return false;
      for (const e of els) if (getComputedStyle(e).visibility === 'hidden') return false;
      return true;
    };
    while (!done()) await new Promise((r) => requestAnimationFrame(r));
    return performance.now();
  }, N);
  await settle(page);
  // Diagnosis: SWITCHYARD_PERF_CSS adds a style sheet (e.g. hide edges).
  if (process.env.SWITCHYARD_PERF_CSS) await page.addStyleTag({ content: process.env.SWITCHYARD_PERF_CSS });
  const rendered = await page.locator('.react-flow__node').count();
  const zoomFit = await page.locator('.react-flow__viewport').evaluate((e) => new DOMMatrix(getComputedStyle(e).transform).a);
  await screenshot(page, `perf-${N}-fit`);

  const panFit = await measurePan(page);
  // Zoom in to ~1: only nodes on screen are rendered (onlyRenderVisibleElements).
  for (let k = 0; k < 30; k++) {
    const z = await page.locator('.react-flow__viewport').evaluate((e) => new DOMMatrix(getComputedStyle(e).transform).a);
    if (z >= 0.9) break;
    await page.locator('.react-flow__controls-zoomin').click();
    await settle(page);
  }
  const zoomNear = await page.locator('.react-flow__viewport').evaluate((e) => new DOMMatrix(getComputedStyle(e).transform).a);
  const renderedNear = await page.locator('.react-flow__node').count();
  const panNear = await measurePan(page);
  await screenshot(page, `perf-${N}-zoomed`);

  // The editor still answers after all that.
  await page.locator(tid('fit-view')).click();
  await until(async () => (await page.locator('.react-flow__node').count()) === N, 'all nodes back after Fit');
  assert.deepEqual(errors.map(String), [], 'no page errors');
  await context.close();

  const fmt = (p) =>
    `${p.fps.toFixed(1)} fps (${p.frames} frames in ${p.elapsedMs} ms, ${p.moves} pointer moves; p95 frame gap ${p.p95GapMs.toFixed(1)} ms, max ${p.maxGapMs.toFixed(1)} ms; long tasks ${p.longTasks}, longest ${p.longestTaskMs.toFixed(0)} ms)`;
  console.log(`perf: nodes=${N} open=${openMs.toFixed(0)} ms (navigation start → all ${rendered} nodes rendered and measured)`);
  console.log(`perf: pan at fit zoom ${zoomFit.toFixed(3)}: ${fmt(panFit)}`);
  console.log(`perf: pan at zoom ${zoomNear.toFixed(2)} (${renderedNear} nodes rendered): ${fmt(panNear)}`);
  console.log(JSON.stringify({ nodes: N, openMs: Math.round(openMs), zoomFit, panFit, zoomNear, renderedNear, panNear }));
  // Loose: "without freezing" means frames kept coming.
  assert.ok(panFit.maxGapMs < 2000 && panNear.maxGapMs < 2000, 'no frame gap over 2 s while panning');
} finally {
  await browser.close();
  await stack.stop();
}
