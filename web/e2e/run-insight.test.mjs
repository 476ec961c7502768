// Reading a run: the path taken is highlighted, nodes that ran more than
// once show their visit count, durations show; the header names the
// workflow; a run can be re-run with its input and replayed event by event.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import {
  assertNoPageErrors,
  clickNode,
  TEST_TIMEOUT,
  textMatches,
  tid,
  until,
  waitNodeStatus,
  waitRunStatus,
} from './lib/ui.mjs';

let stack;
let browser;

useStack({ name: 'run-insight', latency: '50ms' }, (s, b) => {
  stack = s;
  browser = b;
});

function reviseLoop() {
  const n = (id, type, x, y, data) => ({ id, type, position: { x, y }, data });
  const e = (id, source, sourceHandle, target) => ({ id, source, target, sourceHandle, targetHandle: 'input' });
  return {
    nodes: [
      n('start', 'start', 0, 120, { initialInput: 'a poem' }),
      n('writer', 'agent', 260, 120, { agentName: 'Writer', userPrompt: 'Write {{PREVIOUS_OUTPUT}}' }),
      n('review', 'approval', 560, 120, { prompt: 'Good?' }),
      n('publish', 'agent', 860, 0, { agentName: 'Publisher', userPrompt: 'Publish {{PREVIOUS_OUTPUT}}' }),
      n('reviser', 'agent', 860, 260, { agentName: 'Reviser', userPrompt: 'Fix: $REJECTION_REASON' }),
    ],
    edges: [
      e('e1', 'start', 'output', 'writer'),
      e('e2', 'writer', 'output', 'review'),
      e('e3', 'review', 'approve', 'publish'),
      e('e4', 'review', 'reject', 'reviser'),
      e('e5', 'reviser', 'output', 'review'),
    ],
  };
}

const fired = async (page, id) => (await page.locator(tid(`edge-${id}`)).getAttribute('data-fired')) === 'true';

test('a reject loop: path, visit counts, durations, re-run and replay', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Poem with review', reviseLoop());
  for (const theme of ['light', 'dark']) {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      const run = await stack.api.post('/api/runs', { workflowId: wf.id, input: `topic-${theme}` });
      await page.goto(`/runs/${run.runId}`);
      await textMatches(page.locator(tid('run-title')), /Poem with review/, 'the run title names the workflow');
      await waitNodeStatus(page, 'review', 'waiting');
      assert.ok(await fired(page, 'e1'), 'start → writer fired');
      assert.ok(await fired(page, 'e2'), 'writer → review fired');
      assert.ok(!(await fired(page, 'e3')) && !(await fired(page, 'e4')), 'nothing left review yet');

      // Reject once: the reviser runs, review asks again (visit 2).
      await page.locator(tid('approval-note-review')).fill('more rhyme');
      await page.locator(tid('reject-review')).click();
      await until(async () => (await page.locator(tid('node-meta-review')).textContent())?.startsWith('×2'), 'review visited twice', 30_000);
      await waitNodeStatus(page, 'review', 'waiting');
      assert.ok(await fired(page, 'e4'), 'reject edge fired');
      assert.ok(await fired(page, 'e5'), 'the back edge fired');
      assert.ok(!(await fired(page, 'e3')), 'approve edge not yet');
      await page.locator(tid('approve-review')).click();
      await waitRunStatus(page, 'completed');
      await until(async () => await fired(page, 'e3'), 'approve edge fired');
      // Visit counts only where a node ran twice; durations everywhere.
      assert.match((await page.locator(tid('node-meta-review')).textContent()) ?? '', /^×2 · \d/);
      assert.match((await page.locator(tid('node-meta-writer')).textContent()) ?? '', /^\d+(\.\d)? (ms|s) · \d+ tok$/);
      await clickNode(page, 'review');
      await textMatches(page.locator(tid('node-details-facts')), /Visits\s*2/, 'node details show the visits');
      // The loop's back edge is drawn under the nodes, not hidden behind them.
      assert.equal(await page.locator(tid('edge-e5')).getAttribute('data-back'), 'true');
      const edgeBox = await page.locator(`${tid('edge-e5')} path.react-flow__edge-path`).boundingBox();
      for (const id of ['review', 'reviser']) {
        const nodeBox = await page.locator(tid(`node-${id}`)).boundingBox();
        assert.ok(edgeBox.y + edgeBox.height > nodeBox.y + nodeBox.height + 10, `the back edge passes below ${id}`);
      }
      await screenshot(page, `run-insight-${theme}`);

      // Replay: back to the start, then to the first wait.
      const events = await stack.api.events(run.runId);
      await page.locator(tid('replay-toggle')).click();
      await textMatches(page.locator(tid('replay-pos')), new RegExp(`^0 / ${events.length}$`), 'the replay at its start');
      await until(async () => (await page.locator(tid('node-writer')).getAttribute('data-run-status')) === 'idle', 'writer idle at event 0');
      assert.ok(!(await fired(page, 'e1')), 'no edge fired before the first event');
      const firstWait = events.findIndex((e) => e.type === 'wait_input') + 1;
      await page.locator(tid('replay-range')).fill(String(firstWait));
      await textMatches(page.locator(tid('replay-pos')), new RegExp(`^${firstWait} / `), 'the replay position');
      await until(async () => (await page.locator(tid('node-review')).getAttribute('data-run-status')) === 'waiting', 'review waiting as of the first wait');
      assert.equal(await page.locator(tid('node-publish')).getAttribute('data-run-status'), 'idle');
      assert.ok(await fired(page, 'e2') && !(await fired(page, 'e4')), 'the path as of the first wait');
      await page.locator(tid('approval-card-review')).waitFor({ state: 'detached' }); // nothing to answer in the past
      await page.locator(tid('replay-next')).click();
      await textMatches(page.locator(tid('replay-pos')), new RegExp(`^${firstWait + 1} / `), 'one step forward');
      await page.locator(tid('replay-range')).fill(String(events.length));
      await until(async () => (await page.locator(tid('node-publish')).getAttribute('data-run-status')) === 'completed', 'the end of the replay');
      await screenshot(page, `run-replay-${theme}`);
      await page.locator(tid('replay-toggle')).click();
      await page.locator(tid('replay')).waitFor({ state: 'detached' });

      // Re-run: a new run of the same workflow with the same input.
      await page.locator(tid('rerun')).click();
      await page.waitForURL((u) => u.pathname.startsWith('/runs/') && !u.pathname.endsWith(run.runId));
      const next = new URL(page.url()).pathname.split('/').pop();
      await waitNodeStatus(page, 'review', 'waiting');
      const again = await stack.api.getRun(next);
      assert.equal(again.workflowId, wf.id);
      assert.equal(again.input, `topic-${theme}`);
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});

test('the runs page lists runs across workflows, filters them and re-runs one', { timeout: TEST_TIMEOUT }, async () => {
  const n = (id, type, x, y, data) => ({ id, type, position: { x, y }, data });
  const e = (id, source, sourceHandle, target) => ({ id, source, target, sourceHandle, targetHandle: 'input' });
  const quick = await stack.api.createWorkflow('Quick answer', {
    nodes: [n('s', 'start', 0, 0, {}), n('a', 'agent', 260, 0, { agentName: 'Answerer', userPrompt: '{{PREVIOUS_OUTPUT}}' })],
    edges: [e('e1', 's', 'output', 'a')],
  });
  const review = await stack.api.createWorkflow('Needs review', reviseLoop());
  const done = await stack.api.post('/api/runs', { workflowId: quick.id, input: 'what is 2+2' });
  const paused = await stack.api.post('/api/runs', { workflowId: review.id, input: 'a sonnet' });
  await until(async () => (await stack.api.getRun(done.runId)).status === 'completed', 'the quick run to complete', 30_000);
  await until(async () => (await stack.api.getRun(paused.runId)).status === 'paused', 'the review run to pause', 30_000);

  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token });
  try {
    await page.goto('/');
    await textMatches(page.locator(tid('server-status')), /Connected/, 'server status');
    await page.locator(tid('runs-link')).click();
    await page.locator(tid('runs-page')).waitFor();
    const rowDone = page.locator(tid(`runs-row-${done.runId}`));
    const rowPaused = page.locator(tid(`runs-row-${paused.runId}`));
    await rowDone.waitFor();
    await rowPaused.waitFor();
    assert.match((await rowDone.textContent()) ?? '', /completed[\s\S]*Quick answer[\s\S]*what is 2\+2/);
    assert.match((await rowPaused.textContent()) ?? '', /paused[\s\S]*Needs review[\s\S]*a sonnet/);
    assert.match((await page.locator(tid(`runs-duration-${done.runId}`)).textContent()) ?? '', /^\d+(\.\d)? (ms|s)$/);
    await screenshot(page, 'runs-page-light');
    await page.emulateMedia({ colorScheme: 'dark' }); // the theme follows the system by default
    await screenshot(page, 'runs-page-dark');
    await page.emulateMedia({ colorScheme: 'light' });

    await page.locator(tid('runs-status')).selectOption('paused');
    await rowDone.waitFor({ state: 'detached' });
    await rowPaused.waitFor();
    await page.locator(tid('runs-status')).selectOption('');
    await page.locator(tid('runs-workflow')).selectOption(quick.id);
    await rowPaused.waitFor({ state: 'detached' });
    await rowDone.waitFor();

    // A run started elsewhere shows up without a reload.
    const other = await stack.api.post('/api/runs', { workflowId: quick.id, input: 'live one' });
    await page.locator(tid(`runs-row-${other.runId}`)).waitFor({ timeout: 30_000 });

    await page.locator(tid(`runs-rerun-${done.runId}`)).click();
    await page.waitForURL((u) => /^\/runs\/[^/]+$/.test(u.pathname) && !u.pathname.endsWith(done.runId));
    const next = new URL(page.url()).pathname.split('/').pop();
    await textMatches(page.locator(tid('run-title')), /Quick answer/, 'the re-run page');
    await waitRunStatus(page, 'completed');
    assert.equal((await stack.api.getRun(next)).input, 'what is 2+2');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('tokens from a provider that reports usage, and subagents the lead delegates to', { timeout: TEST_TIMEOUT }, async () => {
  const n = (id, type, x, y, data) => ({ id, type, position: { x, y }, data });
  const tools = (subagents) => ({ web_search: false, subagents });
  const wf = await stack.api.createWorkflow('Lead and team', {
    nodes: [
      n('start', 'start', 0, 0, { initialInput: 'CI migration' }),
      n('lead', 'agent', 320, 0, { agentName: 'Lead', userPrompt: 'delegate: {{PREVIOUS_OUTPUT}}', tools: tools(true) }),
      n('researcher', 'agent', 160, 260, { agentName: 'Researcher', userPrompt: '{{PREVIOUS_OUTPUT}}', tools: tools(false) }),
      n('critic', 'agent', 480, 260, { agentName: 'Critic', userPrompt: '{{PREVIOUS_OUTPUT}}', tools: tools(false) }),
    ],
    edges: [
      { id: 'e1', source: 'start', target: 'lead', sourceHandle: 'output', targetHandle: 'input' },
      { id: 's1', source: 'lead', target: 'researcher', sourceHandle: 'subagent', targetHandle: 'input' },
      { id: 's2', source: 'lead', target: 'critic', sourceHandle: 'subagent', targetHandle: 'input' },
    ],
  });
  const run = await stack.api.post('/api/runs', { workflowId: wf.id });
  for (const theme of ['light', 'dark']) {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await page.goto(`/runs/${run.runId}`);
      await waitRunStatus(page, 'completed');
      const done = await until(async () => {
        const r = await stack.api.getRun(run.runId);
        return r.usage?.totalTokens > 0 ? r : null;
      }, 'the run to report usage');
      await textMatches(page.locator(tid('run-tokens')), new RegExp(`^${done.usage.totalTokens.toLocaleString('en-US')} tokens`), 'the run total');
      for (const id of ['lead', 'researcher', 'critic']) {
        await textMatches(page.locator(tid(`node-meta-${id}`)), /\d+ tok$/, `tokens on ${id}`);
      }
      for (const id of ['s1', 's2']) {
        assert.equal(await page.locator(tid(`edge-${id}`)).getAttribute('data-fired'), 'true', `subagent edge ${id} fired`);
      }
      await screenshot(page, `run-subagents-tokens-${theme}`);
      await page.goto('/runs');
      await textMatches(page.locator(tid(`runs-tokens-${run.runId}`)), new RegExp(done.usage.totalTokens.toLocaleString('en-US')), 'tokens on the runs page');
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});
