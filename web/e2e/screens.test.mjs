// Screenshots of the main screens, light and dark, at 1440x900 and
// 1100x800, each page loaded at that size (what a person opening it sees):
// the workflow list, a drawn graph in the editor, a YAML workflow in the
// canvas and split views, a finished run, the inbox with a pending
// approval. Besides the PNGs (web/test-results/screens-*.png, to look
// at), each view is checked for the defects looked for by eye: nothing
// runs past the window, the canvas is not covered by a panel, every node
// of the graph is in view.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import { assertNoPageErrors, settle, TEST_TIMEOUT, textMatches, tid, until } from './lib/ui.mjs';

const REVIEW_YAML = `name: Release review
description: Build, test and lint, then a summary to approve.
# comments stay in the file
nodes:
  - id: fetch
    bash: git fetch origin
  - id: build
    bash: make build
    depends_on: [fetch]
  - id: test
    bash: make test
    depends_on: [build]
  - id: lint
    bash: make lint
    depends_on: [fetch]
  - id: summary
    prompt: "Summarize the build: $build.output and the lint: $lint.output"
    depends_on: [test, lint]
    trigger_rule: all_done
  - id: gate
    depends_on: [summary]
    approval:
      message: Ship it?
`;

const SIZES = [
  [1440, 900],
  [1100, 800],
];
const THEMES = ['light', 'dark'];

let stack;
let browser;

useStack({ name: 'screens', latency: '50ms', workflows: { 'release-review.yaml': REVIEW_YAML, 'team/nightly.yaml': REVIEW_YAML.replace('Release review', 'Nightly') } }, (s, b) => {
  stack = s;
  browser = b;
});

function reviewGraph() {
  const n = (id, type, x, y, data) => ({ id, type, position: { x, y }, data });
  const e = (id, source, sourceHandle, target) => ({ id, source, target, sourceHandle, targetHandle: 'input' });
  return {
    nodes: [
      n('start', 'start', 0, 120, { initialInput: 'a short story about owls' }),
      n('writer', 'agent', 280, 120, { agentName: 'Writer', systemPrompt: 'You write short stories.', userPrompt: 'Write {{PREVIOUS_OUTPUT}}' }),
      n('check', 'if', 580, 120, { conditions: [{ operator: 'contains', value: 'owl' }] }),
      n('review', 'approval', 860, 40, { prompt: 'Publish this story?' }),
      n('fix', 'agent', 860, 260, { agentName: 'Fixer', userPrompt: 'Add owls to: {{PREVIOUS_OUTPUT}}' }),
      n('publish', 'agent', 1140, 40, { agentName: 'Publisher', userPrompt: 'Publish: {{PREVIOUS_OUTPUT}}' }),
    ],
    edges: [
      e('e1', 'start', 'output', 'writer'),
      e('e2', 'writer', 'output', 'check'),
      e('e3', 'check', 'condition-0', 'review'),
      e('e4', 'check', 'false', 'fix'),
      e('e5', 'review', 'approve', 'publish'),
    ],
  };
}

/** Fails when the page scrolls sideways or a side panel overlaps the canvas; returns what it measured. */
async function checkLayout(page, what) {
  const m = await page.evaluate(() => {
    const box = (sel) => document.querySelector(sel)?.getBoundingClientRect() ?? null;
    return {
      docWidth: document.documentElement.scrollWidth,
      winWidth: window.innerWidth,
      canvas: box('.react-flow'),
      left: box('.side--left'),
      right: box('.side--right'),
    };
  });
  assert.ok(m.docWidth <= m.winWidth, `${what}: the page is no wider than the window (${m.docWidth} > ${m.winWidth})`);
  if (m.canvas) {
    if (m.left) assert.ok(m.left.right <= m.canvas.left + 1, `${what}: the left panel does not cover the canvas`);
    if (m.right) assert.ok(m.right.left >= m.canvas.right - 1, `${what}: the right panel does not cover the canvas`);
  }
  return m;
}

/** Every node of the canvas is inside it. */
async function allNodesInView(page, what) {
  await settle(page);
  const out = await page.evaluate(() => {
    const pane = document.querySelector('.react-flow').getBoundingClientRect();
    return [...document.querySelectorAll('.react-flow__node')]
      .filter((n) => {
        const b = n.getBoundingClientRect();
        return b.left < pane.left - 1 || b.top < pane.top - 1 || b.right > pane.right + 1 || b.bottom > pane.bottom + 1;
      })
      .map((n) => n.getAttribute('data-id'));
  });
  assert.deepEqual(out, [], `${what}: every node is in view`);
}

async function eachView(fn) {
  for (const theme of THEMES) {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      for (const [w, h] of SIZES) {
        await page.setViewportSize({ width: w, height: h });
        await fn(page, `${theme}-${w}`);
      }
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
}

async function openPage(page, path) {
  await page.goto(path);
  await textMatches(page.locator(tid('server-status')), /Connected/, 'server status');
}

async function yamlId(name) {
  const wf = (await stack.api.get('/api/workflows')).find((w) => w.kind === 'yaml' && w.name === name);
  assert.ok(wf, `the server lists ${name}`);
  return wf.id;
}

test('screens: the workflow list and a drawn graph in the editor', { timeout: TEST_TIMEOUT * 2 }, async () => {
  const wf = await stack.api.createWorkflow('Owl stories with review', reviewGraph());
  for (const name of ['Daily digest', 'Bug triage', 'A workflow with a rather long name that has to wrap in the list']) {
    await stack.api.createWorkflow(name, { nodes: [{ id: 'start', type: 'start', position: { x: 0, y: 0 }, data: {} }], edges: [] });
  }
  await eachView(async (page, tag) => {
    // The list: the editor's left panel (collapsed at first below 1280 px: opened as a person would).
    await openPage(page, `/workflows/${wf.id}`);
    await page.locator(tid('canvas')).waitFor();
    if ((await page.locator(tid('workflow-list')).count()) === 0) await page.locator(tid('toggle-left-panel')).click();
    await page.locator(tid(`workflow-item-${wf.id}`)).waitFor();
    await until(async () => (await page.locator('[data-testid^="workflow-item-"]').count()) >= 6, 'the drawn and YAML workflows listed');
    await allNodesInView(page, `the graph beside the list (${tag})`);
    await checkLayout(page, `workflow list ${tag}`);
    await screenshot(page, `screens-workflow-list-${tag}`);

    // The graph as it opens at this size (left panel as the width decides), a node selected.
    await openPage(page, `/workflows/${wf.id}`);
    await page.locator(tid('node-writer')).waitFor();
    await allNodesInView(page, `the drawn graph (${tag})`);
    await page.locator(`${tid('node-writer')} .sy-node__head`).click();
    await page.locator(tid('inspector-agentName')).waitFor();
    // The prompt fields are code editors loaded on demand: wait for their text.
    await textMatches(page.locator(tid('inspector-systemPrompt')), /You write short stories/, 'the system prompt field');
    await textMatches(page.locator(tid('inspector-userPrompt')), /Write \{\{PREVIOUS_OUTPUT\}\}/, 'the user prompt field');
    await checkLayout(page, `editor ${tag}`);
    await screenshot(page, `screens-editor-graph-${tag}`);
  });
});

test('screens: a YAML workflow in the canvas and split views', { timeout: TEST_TIMEOUT * 2 }, async () => {
  const id = await yamlId('Release review');
  await eachView(async (page, tag) => {
    await openPage(page, `/workflows/${encodeURIComponent(id)}`);
    await page.locator(tid('yaml-view-canvas')).click();
    await page.locator(tid('node-summary')).waitFor();
    await allNodesInView(page, `YAML canvas (${tag})`);
    await checkLayout(page, `YAML canvas ${tag}`);
    await screenshot(page, `screens-yaml-canvas-${tag}`);
    await page.locator(tid('yaml-view-split')).click();
    await page.locator(tid('yaml-text')).waitFor();
    await textMatches(page.locator(tid('yaml-text')), /comments stay in the file/, 'the text pane');
    await page.keyboard.press('0'); // the pane got narrower: show the whole graph
    await settle(page);
    await checkLayout(page, `YAML split ${tag}`);
    await screenshot(page, `screens-yaml-split-${tag}`);
    await page.locator(tid('yaml-view-canvas')).click(); // the next page starts from the canvas view
  });
});

test('screens: a finished run and the inbox with a pending approval', { timeout: TEST_TIMEOUT * 2 }, async () => {
  const wf = await stack.api.createWorkflow('Owl stories (run)', reviewGraph());
  const run = await stack.api.post('/api/runs', { workflowId: wf.id, input: 'a story about owls' });
  await until(async () => (await stack.api.getRun(run.runId)).status === 'paused', 'the run to wait for approval', 30_000);
  // One stays waiting (the inbox); a second run is approved and finishes.
  const done = await stack.api.post('/api/runs', { workflowId: wf.id, input: 'another story about owls' });
  await until(async () => (await stack.api.getRun(done.runId)).status === 'paused', 'the second run to wait', 30_000);
  await stack.api.post(`/api/runs/${done.runId}/approvals/review`, { decision: 'approve', note: 'lovely' });
  await until(async () => (await stack.api.getRun(done.runId)).status === 'completed', 'the second run to complete', 30_000);
  await eachView(async (page, tag) => {
    await openPage(page, `/runs/${done.runId}`);
    await textMatches(page.locator(tid('run-status')), /^completed$/, 'the run status');
    await page.locator(tid('node-publish')).waitFor();
    await until(async () => (await page.locator(tid('node-publish')).getAttribute('data-run-status')) === 'completed', 'publish completed');
    await allNodesInView(page, `finished run (${tag})`);
    await page.locator(`${tid('node-writer')} .sy-node__head`).click();
    await page.locator(tid('node-details-output')).waitFor();
    await checkLayout(page, `finished run ${tag}`);
    await screenshot(page, `screens-run-finished-${tag}`);

    await openPage(page, '/approvals');
    await page.locator(tid(`inbox-item-${run.runId}-review`)).waitFor();
    // The approval comes after an if node: it approves what the Writer wrote.
    await textMatches(page.locator(tid(`inbox-name-${run.runId}-review`)), /approval of “Writer”/, 'the inbox names the writer, not the if');
    await checkLayout(page, `inbox ${tag}`);
    await screenshot(page, `screens-inbox-${tag}`);
  });
});
