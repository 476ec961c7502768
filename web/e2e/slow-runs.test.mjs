// Runs with a slow model (1.5 s a reply): reloading the page mid-run
// catches up without losing or repeating log lines; Cancel stops a run.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, newPage, screenshot } from './lib/browser.mjs';
import { startStack } from './lib/stack.mjs';
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

before(async () => {
  stack = await startStack({ name: 'slow-runs', latency: '1500ms' });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await stack?.stop();
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
      const runId = await startFromEditor(page, 'Slow chain', chain(3));
      await textMatches(page.locator(tid('stream-state')), /^live$/, 'stream state');
      // Step 1 answered, step 2 is waiting on the model.
      await waitNodeStatus(page, 'a1', 'completed', 20_000);
      await waitNodeStatus(page, 'a2', 'running', 20_000);
      await screenshot(page, 'run-running-light');
      const beforeReload = await logLines(page);
      assert.ok(beforeReload.some((l) => l.type === 'llm_response' && l.nodeId === 'a1'), 'step 1 reply logged before the reload');

      await page.reload();
      await page.locator(tid('run-canvas')).waitFor();
      const status = await until(async () => (await page.locator(tid('run-status')).textContent({ timeout: 1000 })) || null, 'the run status after the reload');
      assert.equal(status, 'running', 'reloaded while the run was still going');
      await waitRunStatus(page, 'completed', 30_000);
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
      const runId = await startFromEditor(page, 'To cancel', chain(3));
      await waitNodeStatus(page, 'a1', 'running', 20_000);
      await page.locator(tid('cancel-run')).click(); // the confirm dialog is accepted
      await waitRunStatus(page, 'cancelled', 20_000);
      await textMatches(page.locator(tid('stream-state')), /complete/, 'stream state');
      await page.locator(tid('cancel-run')).waitFor({ state: 'detached' });
      await waitNodeStatus(page, 'a1', 'stopped');
      // A cancelled run leaves nothing undecided: the step it never started ends skipped.
      assert.equal(await page.locator(tid('node-a2')).getAttribute('data-run-status'), 'skipped', 'step 2 never started');
      await screenshot(page, 'run-cancelled-dark');

      const run = await stack.api.getRun(runId);
      assert.equal(run.status, 'cancelled');
      assert.equal(run.outputs.a2, undefined);
      const lines = await logLines(page);
      assert.ok(lines.some((l) => l.type === 'run_status' && l.text === 'cancelled'), 'the log shows the cancellation');
      // Step 2 never ran: its only line is the skip the cancellation ends it with.
      const a2 = lines.filter((l) => l.nodeId === 'a2');
      assert.ok(a2.every((l) => l.type === 'step_end'), `only a skip logged for step 2, saw ${JSON.stringify(a2)}`);
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  });
});
