// Small helpers that drive the UI the way a person does (clicks, drags,
// typing) and read what it shows, by the data-testids in web/TESTING.md.
import assert from 'node:assert/strict';

/** Generous per-test bound: a hung server fails one test, not the whole run. */
export const TEST_TIMEOUT = 120_000;

/** Exact data-testid selector. */
export const tid = (id) => `[data-testid="${id}"]`;

/**
 * Polls fn until it returns a truthy value; fails with the last value seen.
 * @template T
 * @param {() => Promise<T> | T} fn
 * @param {string} what
 * @param {number} [timeoutMs]
 * @returns {Promise<T>}
 */
export async function until(fn, what, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  let lastErr;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > deadline) {
      const detail = lastErr ? `; last error: ${lastErr.message}` : `; last value: ${JSON.stringify(last)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the locator's text matches re; returns the text. */
export async function textMatches(locator, re, what, timeoutMs) {
  let text = '';
  await until(
    async () => {
      text = (await locator.textContent({ timeout: 1000 })) ?? '';
      return re.test(text);
    },
    `${what} to match ${re} (text: ${JSON.stringify(text)})`,
    timeoutMs,
  );
  return text;
}

/** Opens the editor at path and waits for the API to answer. */
export async function openEditor(page, path = '/') {
  await page.goto(path);
  await textMatches(page.locator(tid('server-status')), /Connected/, 'server status');
  await page.locator(tid('canvas')).waitFor();
}

/** Waits until the canvas viewport stops moving (fit-view animations). */
export async function settle(page) {
  // An auto-layout in progress (ELK loads and runs asynchronously).
  await until(async () => !(await page.evaluate(() => document.documentElement.hasAttribute('data-layout-busy'))), 'the layout to finish');
  const transform = () => page.locator('.react-flow__viewport').first().evaluate((e) => e.style.transform);
  let prev = await transform();
  await until(async () => {
    await new Promise((r) => setTimeout(r, 150));
    const now = await transform();
    const same = now === prev;
    prev = now;
    return same;
  }, 'the canvas viewport to settle');
}

/** Ids of the canvas nodes, in DOM order. */
export async function nodeIds(page) {
  return page.$$eval('[data-node-type]', (els) => els.map((e) => e.getAttribute('data-testid').replace(/^node-/, '')));
}

async function newNodeId(page, before, type) {
  return until(async () => {
    const after = await nodeIds(page);
    const fresh = after.filter((id) => !before.includes(id));
    if (fresh.length !== 1) return null;
    const t = await page.locator(tid(`node-${fresh[0]}`)).getAttribute('data-node-type');
    assert.equal(t, type, `the new node ${fresh[0]} is a ${type}`);
    return fresh[0];
  }, `a new ${type} node on the canvas`);
}

/** Adds a node with a click on its palette button; returns its id. */
export async function addNodeByClick(page, type) {
  const before = await nodeIds(page);
  await page.locator(tid(`palette-${type}`)).click();
  return newNodeId(page, before, type);
}

/** Drags a palette button onto the canvas at (x, y) relative to the canvas box. */
export async function addNodeByDrag(page, type, at) {
  const before = await nodeIds(page);
  await page.locator(tid(`palette-${type}`)).dragTo(page.locator(tid('canvas')), { targetPosition: at });
  return newNodeId(page, before, type);
}

async function center(locator, what) {
  await locator.waitFor({ state: 'visible' });
  const b = await locator.boundingBox();
  assert.ok(b, `${what} has a box`);
  return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
}

export function handle(page, nodeId, handleId) {
  return page.locator(`${tid(`node-${nodeId}`)} .react-flow__handle[data-handleid="${handleId}"]`);
}

async function edgeCount(page) {
  return page.locator('.react-flow__edge').count();
}

/**
 * Zooms out (as a person would, with the zoom control) until every locator
 * is inside the canvas: fit keeps text readable, so a wider graph runs past
 * the view.
 */
export async function bringIntoView(page, locators) {
  for (let i = 0; i < 10; i++) {
    const pane = await page.locator('.react-flow').first().boundingBox();
    let inside = true;
    for (const l of locators) {
      const b = await l.boundingBox();
      if (!b || b.x < pane.x + 4 || b.y < pane.y + 4 || b.x + b.width > pane.x + pane.width - 4 || b.y + b.height > pane.y + pane.height - 4) {
        inside = false;
      }
    }
    if (inside) return;
    await page.locator('.react-flow__controls-zoomout').first().click();
    await settle(page);
  }
}

/** Draws an edge by dragging from an output handle to a node's input handle. */
export async function connect(page, source, sourceHandle, target) {
  const before = await edgeCount(page);
  await bringIntoView(page, [handle(page, source, sourceHandle), handle(page, target, 'input')]);
  const from = await center(handle(page, source, sourceHandle), `handle ${source}.${sourceHandle}`);
  const to = await center(handle(page, target, 'input'), `handle ${target}.input`);
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  // Several steps: React Flow tracks the pointer and snaps to the handle.
  await page.mouse.move((from.x + to.x) / 2, (from.y + to.y) / 2, { steps: 5 });
  await page.mouse.move(to.x, to.y, { steps: 5 });
  await page.mouse.up();
  await until(async () => (await edgeCount(page)) === before + 1, `edge ${source}.${sourceHandle} → ${target}`);
}

/** Clicks a node's header, zooming out first if it is outside the canvas (run pages too). */
export async function clickNode(page, id) {
  const head = page.locator(`${tid(`node-${id}`)} .sy-node__head`);
  await bringIntoView(page, [head]);
  await head.click();
}

/** Clicks a node (its header) so the inspector shows it. */
export async function selectNode(page, id) {
  await bringIntoView(page, [page.locator(`${tid(`node-${id}`)} .sy-node__head`)]);
  await page.locator(`${tid(`node-${id}`)} .sy-node__head`).click();
  await until(async () => (await page.locator(`${tid('inspector')} .inspector__id code`).textContent()) === id, `inspector of ${id}`);
}

/** Clicks Save on a new workflow; waits for its id in the URL and returns it. */
export async function saveNew(page) {
  await page.locator(tid('save')).click();
  await page.waitForURL((u) => /^\/workflows\/[^/]+$/.test(u.pathname) && u.pathname !== '/workflows/new');
  await page.locator(tid('dirty-indicator')).waitFor({ state: 'detached' });
  return decodeURIComponent(new URL(page.url()).pathname.split('/').pop());
}

/** Waits until validation passed and Run may be pressed. */
export async function waitRunnable(page) {
  await until(
    async () => (await page.locator(tid('run')).isEnabled()) && ((await page.locator(tid('run-blocker')).textContent()) ?? '') === '',
    `the Run button to be enabled (blocker: ${JSON.stringify(await page.locator(tid('run-blocker')).textContent())})`,
  );
}

/** Clicks Run and waits for the run page; returns the run id. */
export async function clickRun(page) {
  await page.locator(tid('run')).click();
  await page.waitForURL(/\/runs\/[^/]+$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop());
  await page.locator(tid('run-canvas')).waitFor();
  return id;
}

export async function runStatus(page) {
  return (await page.locator(tid('run-status')).textContent({ timeout: 1000 }).catch(() => '')) ?? '';
}

export async function waitRunStatus(page, status, timeoutMs = 30_000) {
  await until(async () => (await runStatus(page)) === status, `run status "${status}" (now "${await runStatus(page)}")`, timeoutMs);
}

export async function nodeRunStatus(page, id) {
  return page.locator(tid(`node-${id}`)).getAttribute('data-run-status', { timeout: 1000 });
}

export async function waitNodeStatus(page, id, status, timeoutMs = 30_000) {
  await until(
    async () => (await nodeRunStatus(page, id)) === status,
    `node ${id} to show "${status}" (now "${await nodeRunStatus(page, id).catch(() => '?')}")`,
    timeoutMs,
  );
}

/** Every data-run-status value each node showed since the page loaded. */
export async function statusesSeen(page) {
  return page.evaluate(() => window.__runStatusSeen ?? {});
}

/** The log lines the page shows: seq, type, node and text. */
export async function logLines(page) {
  return page.$$eval('[data-testid="log-line"]', (els) =>
    els.map((e) => ({
      seq: Number(e.getAttribute('data-seq')),
      type: e.getAttribute('data-type'),
      nodeId: e.getAttribute('data-node-id'),
      text: e.querySelector('.log-line__text')?.textContent ?? '',
      streaming: e.classList.contains('is-streaming'),
    })),
  );
}

/**
 * The log lines the UI must show for a run's events: one per event, except
 * that a node's llm_delta chunks share one line (opened by the first chunk)
 * until another event of that node closes it; llm_response (and llm_turn,
 * a turn that called tools) replaces the streamed text in place. Returns the seqs that open lines.
 */
export function expectedLineSeqs(events) {
  const open = new Map();
  const seqs = [];
  for (const e of events) {
    if (e.type === 'llm_delta') {
      if (!open.has(e.nodeId)) {
        open.set(e.nodeId, e.seq);
        seqs.push(e.seq);
      }
      continue;
    }
    if (open.has(e.nodeId)) {
      open.delete(e.nodeId);
      // The streamed line becomes the answer's (or a tool-calling turn's).
      if (e.type === 'llm_response' || e.type === 'llm_turn') continue;
    }
    if (e.type === 'run_status' && ['completed', 'failed', 'cancelled', 'interrupted'].includes(e.content)) open.clear();
    if (e.type === 'subagent_call_end' || e.type === 'subagent_call_error') {
      try {
        open.delete(JSON.parse(e.content).subagentNodeId);
      } catch {
        /* not a call record */
      }
    }
    seqs.push(e.seq);
  }
  return seqs;
}

/** Fails on uncaught errors in the page. */
export function assertNoPageErrors(errors) {
  assert.deepEqual(
    errors.map((e) => String(e?.stack ?? e)),
    [],
    'the page threw no uncaught errors',
  );
}

/** Clicks an edge on its drawn path (its middle), which a routed edge's box centre may miss. */
export async function clickEdge(page, edgeId) {
  const at = await page.evaluate((id) => {
    const g = document.querySelector(`[data-testid="edge-${id}"]`);
    const path = g?.querySelector('path.react-flow__edge-path');
    if (!path) return null;
    const p = path.getPointAtLength(path.getTotalLength() / 2);
    const m = path.getScreenCTM();
    return { x: m.a * p.x + m.c * p.y + m.e, y: m.b * p.x + m.d * p.y + m.f };
  }, edgeId);
  assert.ok(at, `edge ${edgeId} is drawn`);
  await page.mouse.click(at.x, at.y);
}
