// Drawing a workflow, running it, approving and rejecting, and validation
// problems: real Chromium, the real server, the fake LLM (300 ms a reply).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import {
  addNodeByClick,
  addNodeByDrag,
  assertNoPageErrors,
  clickNode,
  clickRun,
  connect,
  logLines,
  nodeIds,
  openEditor,
  saveNew,
  selectNode,
  settle,
  statusesSeen,
  TEST_TIMEOUT,
  textMatches,
  tid,
  until,
  waitNodeStatus,
  waitRunnable,
  waitRunStatus,
} from './lib/ui.mjs';

let stack;
let browser;

useStack({ name: 'editor-run', latency: '300ms' }, (s, b) => {
  stack = s;
  browser = b;
});

/** start → agent → if → (condition 0) approval → approve: agent / reject: agent; else → agent. */
function reviewGraph() {
  const at = (x, y) => ({ x, y });
  return {
    nodes: [
      { id: 'n1', type: 'start', position: at(0, 100), data: { initialInput: '' } },
      { id: 'n2', type: 'agent', position: at(260, 100), data: { agentName: 'Writer', userPrompt: 'Summarise: {{PREVIOUS_OUTPUT}}' } },
      { id: 'n3', type: 'if', position: at(560, 100), data: { conditions: [{ operator: 'contains', value: 'summarise' }] } },
      { id: 'n4', type: 'approval', position: at(860, 40), data: { prompt: 'Ship it?' } },
      { id: 'n5', type: 'agent', position: at(1180, 0), data: { agentName: 'Publisher', userPrompt: 'Publish: {{PREVIOUS_OUTPUT}}' } },
      { id: 'n6', type: 'agent', position: at(1180, 160), data: { agentName: 'Reviser', userPrompt: 'Revise because $REJECTION_REASON' } },
      { id: 'n7', type: 'agent', position: at(860, 260), data: { agentName: 'Fallback', userPrompt: 'Fallback: {{PREVIOUS_OUTPUT}}' } },
    ],
    edges: [
      { id: 'e1', source: 'n1', target: 'n2', sourceHandle: 'output', targetHandle: 'input' },
      { id: 'e2', source: 'n2', target: 'n3', sourceHandle: 'output', targetHandle: 'input' },
      { id: 'e3', source: 'n3', target: 'n4', sourceHandle: 'condition-0', targetHandle: 'input' },
      { id: 'e4', source: 'n3', target: 'n7', sourceHandle: 'false', targetHandle: 'input' },
      { id: 'e5', source: 'n4', target: 'n5', sourceHandle: 'approve', targetHandle: 'input' },
      { id: 'e6', source: 'n4', target: 'n6', sourceHandle: 'reject', targetHandle: 'input' },
    ],
  };
}

describe('editor and runs', () => {
  test('draw start → agent → if → two branches → approval → agent, save, run, approve with a note', { timeout: TEST_TIMEOUT }, async () => {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
    try {
      await openEditor(page, '/workflows/new');
      assert.deepEqual(await nodeIds(page), ['n1', 'n2'], 'a new workflow opens with the starter: start → agent');
      // Draw from a lone start node: delete the starter's agent (its edge goes with it).
      await selectNode(page, 'n2');
      await page.keyboard.press('Delete');
      await until(async () => (await nodeIds(page)).join() === 'n1', 'only the start node left');
      assert.equal(await page.locator('.react-flow__edge').count(), 0);
      await page.locator(tid('workflow-name')).fill('Review flow');

      // Nodes: one dragged from the palette, the rest added with a click.
      const agent = await addNodeByDrag(page, 'agent', { x: 420, y: 200 });
      await connect(page, 'n1', 'output', agent);
      await page.locator(tid('auto-layout')).click();
      await settle(page);
      const iff = await addNodeByClick(page, 'if');
      await connect(page, agent, 'output', iff);
      const approval = await addNodeByClick(page, 'approval');
      const fallback = await addNodeByClick(page, 'agent');
      await page.locator(tid('auto-layout')).click();
      await settle(page);
      await connect(page, iff, 'condition-0', approval);
      await connect(page, iff, 'false', fallback);
      const publisher = await addNodeByClick(page, 'agent');
      await page.locator(tid('auto-layout')).click();
      await settle(page);
      await connect(page, approval, 'approve', publisher);
      await page.locator(tid('auto-layout')).click();
      await settle(page);

      // The inspector: prompts and the if condition.
      await selectNode(page, agent);
      await page.locator(tid('inspector-agentName')).fill('Writer');
      await page.locator(tid('inspector-userPrompt')).fill('Summarise: {{PREVIOUS_OUTPUT}}');
      await selectNode(page, publisher);
      await page.locator(tid('inspector-userPrompt')).fill('Publish: {{PREVIOUS_OUTPUT}}');
      await selectNode(page, fallback);
      await page.locator(tid('inspector-userPrompt')).fill('Fallback: {{PREVIOUS_OUTPUT}}');
      await selectNode(page, iff);
      await page.locator(tid('condition-operator-0')).selectOption('contains');
      await page.locator(tid('condition-value-0')).fill('summarise');
      await textMatches(page.locator(`${tid(`node-${iff}`)} .sy-node__outs`), /contains "summarise"/, 'the if node handle label');
      await selectNode(page, approval);
      await page.locator(tid('inspector-approval-prompt')).fill('Ship it?');

      // Save: the server holds exactly what was drawn.
      await page.locator(tid('dirty-indicator')).waitFor();
      const wfId = await saveNew(page);
      const wf = await stack.api.get(`/api/workflows/${wfId}`);
      assert.equal(wf.name, 'Review flow');
      const byId = Object.fromEntries(wf.graph.nodes.map((n) => [n.id, n]));
      assert.equal(byId[agent].data.userPrompt, 'Summarise: {{PREVIOUS_OUTPUT}}');
      assert.deepEqual(byId[iff].data.conditions, [{ operator: 'contains', value: 'summarise' }]);
      assert.equal(byId[approval].data.prompt, 'Ship it?');
      const edges = wf.graph.edges.map((e) => `${e.source}.${e.sourceHandle}>${e.target}`).sort();
      assert.deepEqual(
        edges,
        [
          `n1.output>${agent}`,
          `${agent}.output>${iff}`,
          `${iff}.condition-0>${approval}`,
          `${iff}.false>${fallback}`,
          `${approval}.approve>${publisher}`,
        ].sort(),
      );
      await waitRunnable(page);
      await screenshot(page, 'editor-light');

      // Run with an input; watch the log and the node states.
      await page.locator(tid('run-input')).fill('trains');
      const runId = await clickRun(page);
      await waitNodeStatus(page, approval, 'waiting');
      await page.locator(tid(`node-approval-form-${approval}`)).waitFor();
      await waitRunStatus(page, 'paused');
      await screenshot(page, 'run-paused-approval-light');
      const seen = await statusesSeen(page);
      assert.ok(seen[agent]?.includes('running'), `the agent showed running (saw ${JSON.stringify(seen[agent])})`);
      assert.equal(await page.locator(tid(`node-${agent}`)).getAttribute('data-run-status'), 'completed');
      assert.equal(await page.locator(tid(`node-${iff}`)).getAttribute('data-run-status'), 'completed');
      // The if took condition 0: the else branch is skipped.
      await waitNodeStatus(page, fallback, 'skipped');
      assert.equal(await page.locator(tid(`node-${publisher}`)).getAttribute('data-run-status'), 'idle');
      assert.match(await page.locator(tid('approvals')).textContent(), /Ship it\?/);

      // Approve on the node itself, with a note.
      await page.locator(tid(`node-approval-note-${approval}`)).fill('looks good to me');
      await page.locator(tid(`node-approve-${approval}`)).click();
      await waitRunStatus(page, 'completed');
      await textMatches(page.locator(tid('stream-state')), /complete/, 'stream state');
      await waitNodeStatus(page, publisher, 'completed');
      assert.equal(await page.locator(tid(`node-${approval}`)).getAttribute('data-run-status'), 'completed');
      await page.locator(tid('approvals')).waitFor({ state: 'detached' });
      await screenshot(page, 'run-completed-light');

      const lines = await logLines(page);
      const llm = lines.filter((l) => l.type === 'llm_response').map((l) => l.text);
      assert.ok(llm.includes('echo: Summarise: trains'), `the writer's reply is in the log: ${JSON.stringify(llm)}`);
      assert.ok(llm.includes('echo: Publish: echo: Summarise: trains'), `the publisher's reply is in the log: ${JSON.stringify(llm)}`);
      const input = lines.filter((l) => l.type === 'input_received');
      assert.equal(input.length, 1);
      assert.match(input[0].text, /approved/i);
      assert.match(input[0].text, /looks good to me/, 'the input_received line shows the note');
      assert.ok(lines.some((l) => l.type === 'logic_check' && /true/.test(l.text)), 'the if check is logged');
      assert.equal(new Set(lines.map((l) => l.seq)).size, lines.length, 'no duplicated lines');

      // The server agrees.
      const run = await stack.api.getRun(runId);
      assert.equal(run.status, 'completed');
      assert.equal(run.outputs[publisher], 'echo: Publish: echo: Summarise: trains');
      const nodes = Object.fromEntries(run.nodes.map((n) => [n.nodeId, n.status]));
      assert.equal(nodes[fallback], 'skipped');

      // The node details show the output of a clicked node.
      await clickNode(page, publisher);
      await textMatches(page.locator(tid('node-details-output')), /echo: Publish/, 'node details output');
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  });

  test('reject with a note: the reject branch runs with $REJECTION_REASON', { timeout: TEST_TIMEOUT }, async () => {
    const wf = await stack.api.createWorkflow('Reject flow', reviewGraph());
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
    try {
      await openEditor(page, `/workflows/${wf.id}`);
      await until(async () => (await nodeIds(page)).length === 7, 'the saved graph on the canvas');
      await waitRunnable(page);
      await screenshot(page, 'editor-dark');
      await page.locator(tid('run-input')).fill('boats');
      const runId = await clickRun(page);
      await waitNodeStatus(page, 'n4', 'waiting');
      await page.locator(tid('approval-card-n4')).waitFor();
      await screenshot(page, 'run-paused-approval-dark');

      // Reject from the side panel card this time.
      await page.locator(tid('approval-note-n4')).fill('too long, cut it');
      await page.locator(tid('reject-n4')).click();
      await waitRunStatus(page, 'completed');
      await waitNodeStatus(page, 'n6', 'completed');
      assert.equal(await page.locator(tid('node-n5')).getAttribute('data-run-status'), 'skipped', 'the approve branch is skipped');
      await screenshot(page, 'run-completed-dark');

      const lines = await logLines(page);
      const input = lines.find((l) => l.type === 'input_received');
      assert.match(input?.text ?? '', /rejected/i);
      assert.match(input?.text ?? '', /too long, cut it/);
      const reviser = lines.find((l) => l.type === 'llm_response' && l.nodeId === 'n6');
      assert.equal(reviser?.text, 'echo: Revise because too long, cut it', 'the fake echoes the rejection reason');

      const run = await stack.api.getRun(runId);
      assert.equal(run.outputs.n6, 'echo: Revise because too long, cut it');
      assert.equal(run.nodes.find((n) => n.nodeId === 'n4').handle, 'reject');
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  });

  test('a validation problem shows on its node, blocks Run and selects the node when clicked', { timeout: TEST_TIMEOUT }, async () => {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
    try {
      await openEditor(page, '/workflows/new');
      const iff = await addNodeByClick(page, 'if');
      await page.locator(tid('condition-value-0')).fill('yes');
      await connect(page, 'n1', 'output', iff);
      // The if has no outgoing edge: if_no_branch, on the node and in the list.
      const badge = page.locator(tid(`node-problems-${iff}`));
      // (Until the new edge is validated the badge may still say "cannot be reached".)
      await until(async () => {
        const title = (await badge.getAttribute('title', { timeout: 1000 })) ?? '';
        return /no outgoing edge/.test(title) && !/cannot be reached/.test(title);
      }, 'only if_no_branch on the node badge');
      await textMatches(page.locator(tid('run-blocker')), /^Fix \d+ errors? to run$/, 'run blocker');
      assert.equal(await page.locator(tid('run')).isDisabled(), true, 'Run is disabled');
      assert.equal(
        await page.locator(tid('run')).getAttribute('aria-describedby'),
        'run-blocker',
        'the button names the reason for assistive tech',
      );

      // Deselect, then pick the node again from the problems list.
      await page.locator('.react-flow__pane').click({ position: { x: 30, y: 30 } });
      await page.locator(tid('inspector-empty')).waitFor();
      await page.locator(tid('tab-problems')).click();
      const item = page.locator(`${tid('problems-panel')} [data-problem-code="if_no_branch"]`);
      await item.waitFor();
      assert.equal(await item.getAttribute('data-node-id'), iff);
      await screenshot(page, 'problems-light');
      await item.click();
      await until(
        async () => (await page.locator(`.react-flow__node[data-id="${iff}"]`).getAttribute('class'))?.includes('selected'),
        'the if node to be selected',
      );
      await page.locator(tid('tab-inspect')).click();
      await textMatches(page.locator(`${tid('inspector')} .inspector__id code`), new RegExp(`^${iff}$`), 'inspector node');
      await textMatches(page.locator(`${tid('inspector')} .node-problems`), /no outgoing edge/, 'problems in the inspector');

      // Fixing it clears the problem and enables Run.
      const agent = await addNodeByClick(page, 'agent');
      await page.locator(tid('auto-layout')).click();
      await settle(page);
      await connect(page, iff, 'false', agent);
      await badge.waitFor({ state: 'detached' });
      await waitRunnable(page);
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  });
});
