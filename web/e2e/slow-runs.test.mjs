// Runs with a slow model (1.5 s a reply): reloading the page mid-run
// catches up without losing or repeating log lines; Cancel stops a run.
// Neither test depends on how fast this machine is: the reload happens
// while the run waits at an approval (then it goes on live), and the cancel
// stops the run wherever it has got to, an approval at the end holding it
// at the latest (which node it stopped is logged).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import {
  assertNoPageErrors,
  clickRun,
  expectedLineSeqs,
  logLines,
  nodeIds,
  openEditor,
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

useStack({ name: 'slow-runs', latency: '1500ms' }, (s, b) => {
  stack = s;
  browser = b;
});

/** start → a1 → a2 → … → a<n>, each agent echoing the previous output. */
function chain(n) {
  const nodes = [{ id: 'n1', type: 'start', position: { x: 0, y: 0 }, data: { initialInput: 'go' } }];
  const edges = [];
  let prev = 'n1';
  for (let i = 1; i <= n; i++) {
    const id = `a${i}`;
    nodes.push({ id, type: 'agent', position: { x: 280 * i, y: 0 }, data: { agentName: `Step ${i}`, userPrompt: `step ${i}: {{PREVIOUS_OUTPUT}}` } });
    edges.push({ id: `e${i}`, source: prev, target: id, sourceHandle: 'output', targetHandle: 'input' });
    prev = id;
  }
  return { nodes, edges };
}

/** start → a1 → ok (approval) → a2 → a3: the run waits at ok until approved. */
function gatedChain() {
  const { nodes, edges } = chain(3);
  const ok = { id: 'ok', type: 'approval', position: { x: 420, y: 200 }, data: { prompt: 'Go on?' } };
  // a1 → ok (approve) → a2, instead of a1 → a2.
  const rest = edges.filter((e) => e.source !== 'a1');
  return {
    nodes: [...nodes, ok],
    edges: [
      ...rest,
      { id: 'e-ok-in', source: 'a1', target: 'ok', sourceHandle: 'output', targetHandle: 'input' },
      { id: 'e-ok-out', source: 'ok', target: 'a2', sourceHandle: 'approve', targetHandle: 'input' },
    ],
  };
}

/** chain(n) → ok (approval): a run that is not cancelled in time waits at ok. */
function chainThenApproval(n) {
  const { nodes, edges } = chain(n);
  nodes.push({ id: 'ok', type: 'approval', position: { x: 280 * (n + 1), y: 0 }, data: { prompt: 'Done?' } });
  edges.push({ id: 'e-ok', source: `a${n}`, target: 'ok', sourceHandle: 'output', targetHandle: 'input' });
  return { nodes, edges };
}

async function startFromEditor(page, name, graph) {
  const wf = await stack.api.createWorkflow(name, graph);
  await openEditor(page, `/workflows/${wf.id}`);
  await until(async () => (await nodeIds(page)).length === graph.nodes.length, 'the graph on the canvas');
  await waitRunnable(page);
  return clickRun(page);
}

describe('slow runs', () => {
  test('reloading mid-run catches up: no lost or duplicated log lines', { timeout: TEST_TIMEOUT }, async () => {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
    try {
      const runId = await startFromEditor(page, 'Slow chain', gatedChain());
      await textMatches(page.locator(tid('stream-state')), /^live$/, 'stream state');
      // Step 1 answered; the run waits at the approval.
      await waitNodeStatus(page, 'a1', 'completed', 90_000);
      await waitNodeStatus(page, 'ok', 'waiting', 90_000);
      const beforeReload = await logLines(page);
      assert.ok(beforeReload.some((l) => l.type === 'llm_response' && l.nodeId === 'a1'), 'step 1 reply logged before the reload');

      await page.reload();
      await page.locator(tid('run-canvas')).waitFor();
      await waitNodeStatus(page, 'ok', 'waiting', 90_000);
      assert.equal((await stack.api.getRun(runId)).status, 'paused', 'reloaded while the run was still going');
      // The rest of the run arrives live, after the reload.
      await stack.api.post(`/api/runs/${runId}/approvals/ok`, { decision: 'approve' });
      await waitNodeStatus(page, 'a2', 'running', 90_000).catch(() => {}); // seen or not, it goes on
      await screenshot(page, 'run-running-light');
      await waitRunStatus(page, 'completed', 90_000);
      await textMatches(page.locator(tid('stream-state')), /complete/, 'stream state');
      await waitNodeStatus(page, 'a3', 'completed');

      const lines = await logLines(page);
      const seqs = lines.map((l) => l.seq);
      assert.equal(new Set(seqs).size, seqs.length, 'no line appears twice');
      const events = await stack.api.events(runId);
      assert.deepEqual(
        events.map((e) => e.seq),
        Array.from({ length: events.length }, (_, i) => i + 1),
        'the server has gapless seqs',
      );
      assert.deepEqual(seqs, expectedLineSeqs(events), 'the log shows one line per event (model chunks merged)');
      assert.equal(
        (await page.locator(tid('log-count')).textContent())?.trim(),
        `${seqs.length} lines`,
        'the line count matches',
      );
      for (const l of beforeReload) assert.ok(seqs.includes(l.seq), `line ${l.seq} (${l.type}) seen before the reload is still there`);
      const replies = lines.filter((l) => l.type === 'llm_response').map((l) => l.text);
      assert.deepEqual(replies, ['echo: step 1: go', 'echo: step 2: echo: step 1: go', 'echo: step 3: echo: step 2: echo: step 1: go']);
      assert.ok(lines.every((l) => !l.streaming), 'no line is left streaming');
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  });

  test('cancelling a running run stops it', { timeout: TEST_TIMEOUT }, async () => {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
    try {
      const order = ['a1', 'a2', 'a3', 'ok'];
      const runId = await startFromEditor(page, 'To cancel', chainThenApproval(3));
      // Cancel as soon as the run shows progress; on a slow machine it may
      // have got further (the approval at the end holds it at the latest).
      await until(async () => (await page.locator(tid('node-a1')).getAttribute('data-run-status', { timeout: 1000 })) !== 'idle', 'step 1 to start', 90_000);
      await page.locator(tid('cancel-run')).click(); // the confirm dialog is accepted
      await waitRunStatus(page, 'cancelled', 90_000);
      await textMatches(page.locator(tid('stream-state')), /complete/, 'stream state');
      await page.locator(tid('cancel-run')).waitFor({ state: 'detached' });
      await screenshot(page, 'run-cancelled-dark');

      // The steps before the cancel completed, the one under way was
      // stopped, the later ones never started: they end skipped.
      const statuses = {};
      for (const id of order) statuses[id] = await page.locator(tid(`node-${id}`)).getAttribute('data-run-status');
      const stopped = order.findIndex((id) => statuses[id] !== 'completed');
      console.log(`cancel stopped the run at ${order[stopped]}: ${JSON.stringify(statuses)}`);
      assert.ok(stopped >= 0, `the cancel left something to stop: ${JSON.stringify(statuses)}`);
      assert.equal(statuses[order[stopped]], 'stopped', `the step under way at the cancel: ${JSON.stringify(statuses)}`);
      for (const id of order.slice(stopped + 1)) assert.equal(statuses[id], 'skipped', `${id} never started: ${JSON.stringify(statuses)}`);

      const run = await stack.api.getRun(runId);
      assert.equal(run.status, 'cancelled');
      assert.equal(run.outputs[order[stopped]], undefined, 'the stopped step has no output');
      const lines = await logLines(page);
      assert.ok(lines.some((l) => l.type === 'run_status' && l.text === 'cancelled'), 'the log shows the cancellation');
      // A step that never ran has only the skip the cancellation ends it with.
      for (const id of order.slice(stopped + 1)) {
        const own = lines.filter((l) => l.nodeId === id);
        assert.ok(own.every((l) => l.type === 'step_end'), `only a skip logged for ${id}, saw ${JSON.stringify(own)}`);
      }
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  });
});
