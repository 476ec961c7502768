// The first minute with Switchyard: a new workflow opens with a starter
// that has no problems, the template gallery opens complete workflows that
// run, "+ New" works on an unsaved draft, pasting twice never stacks copies,
// an import that leaves edges out says which, and the small things around
// them (page-scoped toasts, approve on the canvas, read-only YAML).
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import {
  addNodeByClick,
  assertNoPageErrors,
  clickNode,
  clickRun,
  nodeIds,
  openEditor,
  saveNew,
  selectNode,
  settle,
  TEST_TIMEOUT,
  textMatches,
  tid,
  until,
  waitNodeStatus,
  waitRunnable,
  waitRunStatus,
} from './lib/ui.mjs';

const LONG_PROMPT = `Summarise the release notes below for customers. ${'Keep every breaking change. '.repeat(6)}End with THE-LAST-WORDS.`;
const LONG_YAML = `name: Long prompt
description: A YAML workflow whose prompt is longer than the canvas shows.
nodes:
  - id: ask
    prompt: "${LONG_PROMPT}"
`;

let stack;
let browser;

useStack({ name: 'first-minute', latency: '200ms', workflows: { 'long.yaml': LONG_YAML } }, (s, b) => {
  stack = s;
  browser = b;
});

/** Records the text of every confirm() the page shows (newPage accepts them). */
function recordDialogs(page) {
  const seen = [];
  page.on('dialog', (d) => seen.push(d.message()));
  return seen;
}

async function nodeTypes(page) {
  return page.$$eval('[data-node-type]', (els) => els.map((e) => e.getAttribute('data-node-type')));
}

/** Flow positions of the canvas nodes, from React Flow's transforms. */
async function nodePositions(page) {
  return page.$$eval('.react-flow__node', (els) =>
    els.map((e) => {
      const m = /translate\(([-\d.]+)px,\s*([-\d.]+)px\)/.exec(e.style.transform);
      return { id: e.getAttribute('data-id'), x: Number(m?.[1]), y: Number(m?.[2]) };
    }),
  );
}

async function waitStarter(page) {
  await until(async () => JSON.stringify(await nodeTypes(page)) === '["start","agent"]', 'the starter: start and agent');
  await until(async () => (await page.locator('.react-flow__edge').count()) === 1, 'the starter edge');
}

test('a new workflow opens with a starter (start → agent) and no problem', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await openEditor(page, '/');
    await waitStarter(page);
    await waitRunnable(page);
    assert.equal(await page.locator('[data-testid^="node-problems-"]').count(), 0, 'no problem badge on any node');
    await textMatches(page.locator(tid('tab-problems')), /^Problems$/, 'the problems tab counts nothing');
    await page.locator(tid('starter-hint')).waitFor();
    assert.equal(await page.locator(tid('dirty-indicator')).count(), 0, 'a fresh starter is not an unsaved change');
    await settle(page);
    await screenshot(page, 'first-minute-starter-light');

    // Click-to-add lands wholly inside the visible canvas, even on a crowded centre.
    const canvas = await page.locator(tid('canvas')).boundingBox();
    for (let i = 0; i < 4; i++) {
      const id = await addNodeByClick(page, 'agent');
      const b = await page.locator(tid(`node-${id}`)).boundingBox();
      assert.ok(
        b.x >= canvas.x && b.y >= canvas.y && b.x + b.width <= canvas.x + canvas.width && b.y + b.height <= canvas.y + canvas.height,
        `node ${id} at ${JSON.stringify(b)} is inside the canvas ${JSON.stringify(canvas)}`,
      );
    }
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

for (const theme of ['light', 'dark']) {
  test(`the template gallery (${theme})`, { timeout: TEST_TIMEOUT }, async () => {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await openEditor(page, '/');
      await page.locator(tid('open-templates')).click();
      const gallery = page.locator(tid('template-gallery'));
      await gallery.waitFor();
      for (const id of ['review-loop', 'router', 'lead-subagents', 'yaml-review']) await gallery.locator(tid(`template-${id}`)).waitFor();
      assert.match(await page.locator(tid('template-yaml-yaml-review')).textContent(), /depends_on: \[style, risks\]/);
      await screenshot(page, `first-minute-templates-${theme}`);
      await page.keyboard.press('Escape');
      await gallery.waitFor({ state: 'detached' });
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  });
}

test('a template opens, saves, and runs to its approval and on to completion; toasts stay on their page', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await openEditor(page, '/');
    await page.locator(tid('open-templates')).click();
    await page.locator(tid('template-use-review-loop')).click();
    await page.locator(tid('template-gallery')).waitFor({ state: 'detached' });
    await until(async () => (await nodeIds(page)).sort().join() === 'publisher,review,start,writer', 'the review loop nodes');
    assert.equal(await page.locator(tid('workflow-name')).inputValue(), 'Write, review, publish');
    await page.locator(tid('dirty-indicator')).waitFor();
    await waitRunnable(page);
    await settle(page);
    await screenshot(page, 'first-minute-template-review-loop-light');

    const id = await saveNew(page);
    await textMatches(page.locator(tid('toasts')), /Saved/, 'the Saved toast');
    const wf = await stack.api.get(`/api/workflows/${id}`);
    assert.equal(wf.graph.nodes.length, 4);

    await clickRun(page);
    // The editor's "Saved" does not follow onto the run page.
    assert.doesNotMatch((await page.locator(tid('toasts')).textContent()) ?? '', /Saved/);
    await waitNodeStatus(page, 'review', 'waiting');
    await page.locator(tid('node-approve-review')).click();
    await waitRunStatus(page, 'completed');
    await waitNodeStatus(page, 'publisher', 'completed');
    // Approving on the node answers it; it does not select the node.
    assert.equal(await page.locator('.react-flow__node.selected').count(), 0, 'no node selected by the approve click');
    assert.equal(await page.locator(tid('node-details')).count(), 0, 'no node details opened');
    await screenshot(page, 'first-minute-template-completed-light');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('+ New on an unsaved draft asks, then opens a fresh starter', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  const dialogs = recordDialogs(page);
  try {
    await openEditor(page, '/workflows/new');
    await waitStarter(page);
    // Clean: no question.
    await page.locator(tid('new-workflow')).click();
    await waitStarter(page);
    assert.deepEqual(dialogs, []);

    await addNodeByClick(page, 'if');
    await page.locator(tid('workflow-name')).fill('Draft I was making');
    await page.locator(tid('dirty-indicator')).waitFor();
    await page.locator(tid('new-workflow')).click();
    await until(() => dialogs.length === 1, 'the discard question');
    assert.match(dialogs[0], /“Draft I was making” has unsaved changes\. Discard them and start a new workflow\?/);
    await waitStarter(page);
    await page.locator(tid('dirty-indicator')).waitFor({ state: 'detached' });
    assert.equal(await page.locator(tid('workflow-name')).inputValue(), 'Untitled workflow');
    assert.equal(new URL(page.url()).pathname, '/workflows/new');

    // From a saved workflow with changes too.
    await page.locator(tid('workflow-name')).fill('Saved one');
    const id = await saveNew(page);
    await addNodeByClick(page, 'approval');
    await page.locator(tid('new-workflow')).click();
    await until(() => dialogs.length === 2, 'the second discard question');
    await page.waitForURL((u) => u.pathname === '/workflows/new');
    await waitStarter(page);
    const saved = await stack.api.get(`/api/workflows/${id}`);
    assert.equal(saved.graph.nodes.length, 2, 'the discarded change was not saved');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('pasting the same copy twice offsets each copy', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await openEditor(page, '/workflows/new');
    await waitStarter(page);
    await selectNode(page, 'n2');
    const mod = process.platform === 'darwin' ? 'Meta' : 'Control';
    await page.keyboard.press(`${mod}+c`);
    await page.keyboard.press(`${mod}+v`);
    await until(async () => (await nodeIds(page)).length === 3, 'the first pasted node');
    await page.keyboard.press(`${mod}+v`);
    await until(async () => (await nodeIds(page)).length === 4, 'the second pasted node');
    const pos = await nodePositions(page);
    const at = (id) => pos.find((p) => p.id === id);
    const o = at('n2');
    const pasted = pos.filter((p) => !['n1', 'n2'].includes(p.id)).sort((a, b) => a.x - b.x);
    assert.deepEqual(
      pasted.map((p) => [p.x - o.x, p.y - o.y]),
      [
        [40, 40],
        [80, 80],
      ],
      `pasted copies offset from the original: ${JSON.stringify(pos)}`,
    );
    await settle(page);
    await screenshot(page, 'first-minute-paste-light');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('an import that leaves out edges to missing nodes lists them, and asks before replacing unsaved work', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  const dialogs = recordDialogs(page);
  try {
    await openEditor(page, '/workflows/new');
    await waitStarter(page);
    await addNodeByClick(page, 'agent');
    await page.locator(tid('dirty-indicator')).waitFor();
    const file = {
      nodes: [
        { id: 's', type: 'start', position: { x: 0, y: 0 }, data: { initialInput: 'hi' } },
        { id: 'a', type: 'agent', position: { x: 320, y: 0 }, data: { agentName: 'Alpha', userPrompt: '{{PREVIOUS_OUTPUT}}' } },
      ],
      edges: [
        { id: 'e1', source: 's', target: 'a', sourceHandle: 'output', targetHandle: 'input' },
        { id: 'e2', source: 'a', target: 'ghost', sourceHandle: 'output', targetHandle: 'input' },
      ],
    };
    await page.locator(tid('import-file')).setInputFiles({
      name: 'broken.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify(file)),
    });
    await until(() => dialogs.length === 1, 'the replace question');
    assert.match(dialogs[0], /unsaved changes\. Discard them and replace the open graph with broken\.json \(1 edge to missing nodes will be left out\.\)\?/);
    await until(async () => (await nodeIds(page)).sort().join() === 'a,s', 'the imported nodes');
    const report = page.locator(tid('import-report'));
    await report.waitFor();
    assert.match(await report.textContent(), /Imported broken\.json without 1 edge/);
    assert.deepEqual(await page.locator(tid('import-dropped-edge')).allTextContents(), ['e2: a → ghost (no node ghost)']);
    await textMatches(page.locator(tid('toasts')), /Left out 1 edge to missing nodes: e2: a → ghost/, 'the import toast');
    assert.equal(await page.locator('.react-flow__edge').count(), 1);
    await screenshot(page, 'first-minute-import-dropped-light');
    await page.locator(tid('import-report-close')).click();
    await report.waitFor({ state: 'detached' });

    // + New asks again (the import is unsaved); a later import onto the clean starter asks nothing.
    await page.locator(tid('new-workflow')).click();
    await until(() => dialogs.length === 2, 'the discard question for the imported draft');
    await waitStarter(page);
    await page.locator(tid('import-file')).setInputFiles({
      name: 'ok.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify({ ...file, edges: [file.edges[0]] })),
    });
    await until(async () => (await nodeIds(page)).sort().join() === 'a,s', 'the second import');
    assert.equal(dialogs.length, 2, 'no question when nothing is unsaved');
    assert.equal(await page.locator(tid('import-report')).count(), 0, 'no report when nothing was left out');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('a final sign-off approval (no outgoing edge) is a warning, not an error: Run stays enabled', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await openEditor(page, '/workflows/new');
    await waitStarter(page);
    const graph = {
      nodes: [
        { id: 's', type: 'start', position: { x: 0, y: 0 }, data: {} },
        { id: 'a', type: 'agent', position: { x: 320, y: 0 }, data: { agentName: 'A', userPrompt: 'x' } },
        { id: 'p', type: 'approval', position: { x: 640, y: 0 }, data: { prompt: 'Sign off?' } },
      ],
      edges: [
        { id: 'e1', source: 's', target: 'a', sourceHandle: 'output', targetHandle: 'input' },
        { id: 'e2', source: 'a', target: 'p', sourceHandle: 'output', targetHandle: 'input' },
      ],
    };
    await page.locator(tid('import-file')).setInputFiles({ name: 'signoff.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(graph)) });
    await until(async () => (await nodeIds(page)).sort().join() === 'a,p,s', 'the imported nodes');
    await waitRunnable(page);
    await page.locator(tid('tab-problems')).click();
    const item = page.locator(tid('problem-item-0'));
    await item.waitFor();
    assert.equal(await item.getAttribute('data-problem-code'), 'approval_no_branch');
    assert.match(await item.textContent(), /warning/i);
    assert.equal(await page.locator(tid('problem-item-1')).count(), 0, 'only that warning');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('a YAML workflow: no Delete offered, and the step inspector shows the whole prompt', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
  try {
    const list = await stack.api.get('/api/workflows');
    const wf = list.find((w) => w.kind === 'yaml' && w.name === 'Long prompt');
    assert.ok(wf, `the YAML workflow is listed: ${JSON.stringify(list)}`);
    await openEditor(page, `/workflows/${encodeURIComponent(wf.id)}`);
    await page.locator(tid('node-ask')).waitFor();
    await page.locator(tid('tab-workflow')).click();
    await page.locator(tid('workflow-yaml-note')).waitFor();
    assert.equal(await page.locator(tid('workflow-delete')).count(), 0, 'no Delete of a YAML workflow (a file)');
    await page.locator(tid('tab-inspect')).click();
    await clickNode(page, 'ask');
    // The folder is editable: the whole prompt is in the step's main field.
    const text = page.locator(tid('inspector-yaml-main'));
    await text.waitFor();
    assert.equal((await text.inputValue()).trim(), LONG_PROMPT.trim());
    await screenshot(page, 'first-minute-yaml-inspector-dark');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});
