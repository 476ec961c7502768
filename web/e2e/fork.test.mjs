// Run from here (fork a run from a node): on a finished run, the node's
// "Run from here" opens a dialog listing the upstream outputs the new run
// reuses; one is edited (pinned); the new run starts at the node, shows the
// reused nodes as such, feeds the edited text to the node, links back to
// its parent and is marked in the runs list. Drawn graphs and YAML
// workflows; a running run has the button disabled with the reason.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import { assertNoPageErrors, clickNode, settle, TEST_TIMEOUT, textMatches, tid, until, waitRunStatus } from './lib/ui.mjs';

const TWO_STEPS_YAML = `name: Two steps
description: A draft, then its review.
nodes:
  - id: draft
    prompt: "Draft about $ARGUMENTS"
  - id: review
    prompt: "Review: $draft.output"
    depends_on: [draft]
`;

// A step that runs until it is cancelled.
const SLOW_YAML = `name: Slow
description: Sleeps.
nodes:
  - id: hello
    bash: echo hello
  - id: wait
    bash: sleep 120
    depends_on: [hello]
`;

let stack;
let browser;

useStack({ name: 'fork', latency: '50ms', workflows: { 'two-steps.yaml': TWO_STEPS_YAML, 'slow.yaml': SLOW_YAML } }, (s, b) => {
  stack = s;
  browser = b;
});

function writerCritic() {
  const n = (id, type, x, data) => ({ id, type, position: { x, y: 100 }, data });
  const e = (id, source, target) => ({ id, source, target, sourceHandle: 'output', targetHandle: 'input' });
  return {
    nodes: [
      n('start', 'start', 0, { initialInput: 'a topic' }),
      n('writer', 'agent', 280, { agentName: 'Writer', userPrompt: 'Write about {{PREVIOUS_OUTPUT}}' }),
      n('critic', 'agent', 560, { agentName: 'Critic', userPrompt: 'Review: {{PREVIOUS_OUTPUT}}' }),
    ],
    edges: [e('e1', 'start', 'writer'), e('e2', 'writer', 'critic')],
  };
}

async function finishedRun(body) {
  const run = await stack.api.post('/api/runs', body);
  return until(async () => {
    const r = await stack.api.getRun(run.runId);
    return r.status === 'completed' ? r : null;
  }, `run ${run.runId} to complete`, 30_000);
}

async function yamlWorkflowId(name) {
  const wf = (await stack.api.get('/api/workflows')).find((w) => w.kind === 'yaml' && w.name === name);
  assert.ok(wf, `the server lists ${name}`);
  return wf.id;
}

/** Takes the same view at 1440x900 and 1100x800, then goes back to 1440x900. */
async function shots(page, name) {
  for (const [w, h] of [
    [1440, 900],
    [1100, 800],
  ]) {
    await page.setViewportSize({ width: w, height: h });
    if ((await page.locator('[role="dialog"]').count()) > 0) await page.waitForTimeout(200);
    else if (await page.locator('.react-flow__viewport').count()) {
      // A click on a node stops the canvas refitting itself on a resize
      // (the view is the person's then): show the whole graph, as 0 does.
      await page.keyboard.press('0');
      await settle(page);
    } else await page.waitForTimeout(200); // a page without a canvas: one layout pass
    await screenshot(page, `${name}-${w}`);
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

/** Opens Run from here on a node of the open run, edits one upstream output, starts the fork; returns the new run's id. */
async function forkWithEdit(page, { node, edit, expectReused, expectStored, text, shotName }) {
  await clickNode(page, node);
  const button = page.locator(tid('run-from-here'));
  await until(async () => button.isEnabled(), 'Run from here enabled on a finished run');
  await button.click();
  const dialog = page.locator(tid('fork-dialog'));
  await dialog.waitFor();
  const listed = await page.$$eval('[data-testid^="fork-reused-"][data-testid]:not([data-testid="fork-reused-list"])', (els) =>
    els.map((e) => e.getAttribute('data-testid').replace(/^fork-reused-/, '')),
  );
  assert.deepEqual(listed, expectReused, 'the dialog lists exactly the upstream nodes whose outputs are reused');
  await page.locator(tid(`fork-edit-${edit}`)).click();
  const area = page.locator(tid('fork-text'));
  assert.equal(await area.inputValue(), expectStored, 'the editor starts with the stored output');
  await area.fill(text);
  await textMatches(dialog, /edited: pinned/, 'the dialog says the output is edited');
  if (shotName) await shots(page, shotName);
  const before = new URL(page.url()).pathname;
  await page.locator(tid('fork-submit')).click();
  await page.waitForURL((u) => u.pathname.startsWith('/runs/') && u.pathname !== before);
  await dialog.waitFor({ state: 'detached' });
  return decodeURIComponent(new URL(page.url()).pathname.split('/').pop());
}

/** The forked run: reused nodes marked, the edited one as pinned, the next node got the text, the header links back. */
async function checkFork(page, { parentId, childId, pinnedNode, reusedNodes, fromNode, fromName, text }) {
  await waitRunStatus(page, 'completed');
  const reused = page.locator(tid(`node-reused-${pinnedNode}`));
  await until(async () => (await reused.getAttribute('data-reused').catch(() => null)) === 'pinned', `${pinnedNode} marked as an edited (pinned) output`);
  await textMatches(reused, /edited output, not run/, 'the pinned badge');
  assert.match((await reused.getAttribute('title')) ?? '', new RegExp(`run ${parentId}`), 'its title names the parent run');
  for (const id of reusedNodes) {
    assert.equal(await page.locator(tid(`node-reused-${id}`)).getAttribute('data-reused'), 'reused', `${id} reused as stored`);
    await textMatches(page.locator(tid(`node-reused-${id}`)), new RegExp(`reused from run ${parentId.slice(0, 8)}`), `${id}'s badge names the parent run`);
  }
  assert.equal(await page.locator(tid(`node-reused-${fromNode}`)).count(), 0, `${fromNode} ran again (no reused badge)`);

  await clickNode(page, pinnedNode);
  await textMatches(page.locator(tid('node-details-output')), new RegExp(`^${text}$`), `${pinnedNode}'s output is the pinned text`);
  await textMatches(page.locator(tid('node-details-reused')), /did not run.*edited/, 'the details say the node did not run');
  await clickNode(page, fromNode);
  await textMatches(page.locator(tid('node-details-prompt')), new RegExp(text), `${fromNode}'s prompt got the pinned text`);
  await textMatches(page.locator(tid('node-details-output')), new RegExp(`^echo: .*${text}`), `${fromNode} answered the pinned text`);

  await textMatches(page.locator(tid('run-fork-of')), new RegExp(`forked from run ${parentId.slice(0, 8)}… at ${fromName}`), 'the header names the parent run and node');
  assert.equal(await page.locator(tid('run-fork-parent')).getAttribute('href'), `/runs/${parentId}`);

  const got = await stack.api.getRun(childId);
  assert.deepEqual(got.forkOf, { runId: parentId, nodeId: fromNode });
  assert.equal(got.outputs[pinnedNode], text);
  assert.match(got.outputs[fromNode], new RegExp(`^echo: .*${text}`));
}

test('a drawn run: Run from here on the second agent with the first agent’s output edited', { timeout: TEST_TIMEOUT * 2 }, async () => {
  const wf = await stack.api.createWorkflow('Writer and critic', writerCritic());
  for (const theme of ['light', 'dark']) {
    const parent = await finishedRun({ workflowId: wf.id, input: `topic-${theme}` });
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await page.goto(`/runs/${parent.runId}`);
      await waitRunStatus(page, 'completed');
      await page.locator(tid('run-fork-of')).waitFor({ state: 'detached' }); // not a fork

      if (theme === 'light') {
        // The node's context menu offers it too; Escape closes it.
        await page.locator(`${tid('node-critic')} .sy-node__head`).click({ button: 'right' });
        await page.locator(tid('node-menu-run-from-here')).waitFor();
        assert.ok(await page.locator(tid('node-menu-run-from-here')).isEnabled());
        await page.keyboard.press('Escape');
        await page.locator(tid('node-menu')).waitFor({ state: 'detached' });
        // Cancel leaves the run as it was.
        await clickNode(page, 'critic');
        await page.locator(tid('run-from-here')).click();
        await page.locator(tid('fork-cancel')).click();
        await page.locator(tid('fork-dialog')).waitFor({ state: 'detached' });
      }

      const text = `PINNED draft ${theme}`;
      const childId = await forkWithEdit(page, {
        node: 'critic',
        edit: 'writer',
        expectReused: ['start', 'writer'],
        expectStored: `echo: Write about topic-${theme}`,
        text,
        shotName: `fork-dialog-${theme}`,
      });
      assert.notEqual(childId, parent.runId);
      await checkFork(page, { parentId: parent.runId, childId, pinnedNode: 'writer', reusedNodes: ['start'], fromNode: 'critic', fromName: '“Critic”', text });
      await clickNode(page, 'writer');
      await shots(page, `fork-run-${theme}`);

      // The runs list marks the fork and links to its parent.
      await page.goto('/runs');
      const mark = page.locator(tid(`runs-fork-${childId}`));
      await textMatches(mark, new RegExp(`fork of ${parent.runId.slice(0, 8)}`), 'the runs list marks the fork');
      assert.equal(await page.locator(tid(`runs-fork-${parent.runId}`)).count(), 0, 'the parent is no fork');
      await shots(page, `fork-runs-list-${theme}`);
      await mark.click();
      await page.waitForURL((u) => u.pathname === `/runs/${parent.runId}`);
      await waitRunStatus(page, 'completed');
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});

test('a YAML run: Run from here on the second step with the first step’s output edited', { timeout: TEST_TIMEOUT }, async () => {
  const parent = await finishedRun({ workflowId: await yamlWorkflowId('Two steps'), input: 'owls' });
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
  try {
    await page.goto(`/runs/${parent.runId}`);
    await waitRunStatus(page, 'completed');
    const text = 'PINNED yaml draft';
    const childId = await forkWithEdit(page, {
      node: 'review',
      edit: 'draft',
      expectReused: ['draft'],
      expectStored: 'echo: Draft about owls',
      text,
      shotName: 'fork-yaml-dialog-dark',
    });
    await checkFork(page, { parentId: parent.runId, childId, pinnedNode: 'draft', reusedNodes: [], fromNode: 'review', fromName: 'step review', text });
    await shots(page, 'fork-yaml-run-dark');
    await page.locator(tid('run-fork-parent')).click();
    await page.waitForURL((u) => u.pathname === `/runs/${parent.runId}`);
    await waitRunStatus(page, 'completed');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('a running run has Run from here disabled with the reason', { timeout: TEST_TIMEOUT }, async () => {
  const run = await stack.api.post('/api/runs', { workflowId: await yamlWorkflowId('Slow') });
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await page.goto(`/runs/${run.runId}`);
    await waitRunStatus(page, 'running');
    await clickNode(page, 'wait');
    const button = page.locator(tid('run-from-here'));
    await button.waitFor();
    assert.ok(await button.isDisabled(), 'Run from here is disabled while the run runs');
    await textMatches(page.locator(tid('run-from-here-reason')), /still running/, 'the reason is shown');
    assert.match((await button.getAttribute('title')) ?? '', /still running/);
    await page.locator(`${tid('node-wait')} .sy-node__head`).click({ button: 'right' });
    assert.ok(await page.locator(tid('node-menu-run-from-here')).isDisabled(), 'the menu item is disabled too');
    await textMatches(page.locator(tid('node-menu')), /still running/, 'the menu says why');
    await page.keyboard.press('Escape');
    await shots(page, 'fork-disabled-light');
    // Once the run is cancelled it can be run from a node.
    await stack.api.post(`/api/runs/${run.runId}/cancel`);
    await waitRunStatus(page, 'cancelled');
    await until(async () => button.isEnabled(), 'Run from here enabled on the cancelled run');
    assert.equal(await page.locator(tid('run-from-here-reason')).count(), 0);
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});
