// A fan-out to two approval nodes: both wait at once and both can be answered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import {
  assertNoPageErrors,
  clickRun,
  logLines,
  nodeIds,
  openEditor,
  TEST_TIMEOUT,
  tid,
  until,
  waitNodeStatus,
  waitRunnable,
  waitRunStatus,
} from './lib/ui.mjs';

let stack;
let browser;

useStack({ name: 'approvals', latency: '300ms' }, (s, b) => {
  stack = s;
  browser = b;
});

function fanOut() {
  const n = (id, type, x, y, data) => ({ id, type, position: { x, y }, data });
  const e = (id, source, sourceHandle, target) => ({ id, source, target, sourceHandle, targetHandle: 'input' });
  return {
    nodes: [
      n('n1', 'start', 0, 120, { initialInput: 'draft' }),
      n('w', 'agent', 260, 120, { agentName: 'Writer', userPrompt: 'Write: {{PREVIOUS_OUTPUT}}' }),
      n('legal', 'approval', 580, 0, { prompt: 'Legal OK?' }),
      n('brand', 'approval', 580, 260, { prompt: 'Brand OK?' }),
      n('pubL', 'agent', 900, 0, { agentName: 'After legal', userPrompt: 'legal passed: {{PREVIOUS_OUTPUT}}' }),
      n('pubB', 'agent', 900, 260, { agentName: 'After brand', userPrompt: 'brand says $REJECTION_REASON' }),
    ],
    edges: [
      e('e1', 'n1', 'output', 'w'),
      e('e2', 'w', 'output', 'legal'),
      e('e3', 'w', 'output', 'brand'),
      e('e4', 'legal', 'approve', 'pubL'),
      e('e5', 'brand', 'reject', 'pubB'),
    ],
  };
}

test('two pending approvals are shown together and both can be answered', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Two approvals', fanOut());
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
  try {
    await openEditor(page, `/workflows/${wf.id}`);
    await until(async () => (await nodeIds(page)).length === 6, 'the graph on the canvas');
    await waitRunnable(page);
    const runId = await clickRun(page);

    await waitNodeStatus(page, 'legal', 'waiting');
    await waitNodeStatus(page, 'brand', 'waiting');
    await page.locator(tid('approval-card-legal')).waitFor();
    await page.locator(tid('approval-card-brand')).waitFor();
    assert.match((await page.locator(tid('approvals')).textContent()) ?? '', /Waiting for approval \(2\)/);
    await waitRunStatus(page, 'paused');
    const paused = await stack.api.getRun(runId);
    assert.deepEqual(paused.pendingApprovals.map((p) => p.nodeId).sort(), ['brand', 'legal']);
    await screenshot(page, 'run-two-approvals-dark');

    // Legal from the side panel; the other stays pending.
    await page.locator(tid('approval-note-legal')).fill('fine by legal');
    await page.locator(tid('approve-legal')).click();
    await waitNodeStatus(page, 'legal', 'completed');
    await page.locator(tid('approval-card-legal')).waitFor({ state: 'detached' });
    await page.locator(tid('approval-card-brand')).waitFor();
    assert.equal(await page.locator(tid('node-brand')).getAttribute('data-run-status'), 'waiting');
    await waitRunStatus(page, 'paused');

    // Brand on the canvas node: reject with a note.
    await page.locator(tid('node-approval-note-brand')).fill('wrong colours');
    await page.locator(tid('node-reject-brand')).click();
    await waitRunStatus(page, 'completed');
    await waitNodeStatus(page, 'pubL', 'completed');
    await waitNodeStatus(page, 'pubB', 'completed');
    await page.locator(tid('approvals')).waitFor({ state: 'detached' });

    const lines = await logLines(page);
    const inputs = lines.filter((l) => l.type === 'input_received');
    assert.equal(inputs.length, 2);
    assert.match(inputs.find((l) => l.nodeId === 'legal')?.text ?? '', /fine by legal/);
    assert.match(inputs.find((l) => l.nodeId === 'brand')?.text ?? '', /wrong colours/);
    const run = await stack.api.getRun(runId);
    assert.equal(run.status, 'completed');
    assert.equal(run.outputs.pubL, 'echo: legal passed: echo: Write: draft');
    assert.equal(run.outputs.pubB, 'echo: brand says wrong colours');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});
