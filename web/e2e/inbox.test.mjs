// The approvals inbox: waiting approvals of every workflow in one place,
// answered in place, with a live count in the header, opt-in browser
// notifications and the --notify-url webhook.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, test } from 'node:test';
import { launchBrowser, newPage, screenshot } from './lib/browser.mjs';
import { startStack } from './lib/stack.mjs';
import { assertNoPageErrors, TEST_TIMEOUT, textMatches, tid, until } from './lib/ui.mjs';

let stack;
let browser;
let hook;
/** @type {any[]} */
const notices = [];

before(async () => {
  // The webhook receiver: records every JSON post.
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      notices.push({ contentType: req.headers['content-type'], body: JSON.parse(body) });
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => hook.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${hook.address().port}/hook`;
  stack = await startStack({ name: 'inbox', latency: '50ms', args: ['--notify-url', url] });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await stack?.stop();
  hook?.close();
});

function reviewGraph(prompt) {
  const n = (id, type, x, y, data) => ({ id, type, position: { x, y }, data });
  const e = (id, source, sourceHandle, target) => ({ id, source, target, sourceHandle, targetHandle: 'input' });
  return {
    nodes: [
      n('start', 'start', 0, 100, { initialInput: 'draft' }),
      n('writer', 'agent', 260, 100, { agentName: 'Writer', userPrompt: 'Write about {{PREVIOUS_OUTPUT}}' }),
      n('review', 'approval', 560, 100, { prompt }),
      n('publish', 'agent', 860, 0, { agentName: 'Publisher', userPrompt: 'Publish {{PREVIOUS_OUTPUT}}' }),
      n('revise', 'agent', 860, 220, { agentName: 'Reviser', userPrompt: 'Revise: $REJECTION_REASON' }),
    ],
    edges: [
      e('e1', 'start', 'output', 'writer'),
      e('e2', 'writer', 'output', 'review'),
      e('e3', 'review', 'approve', 'publish'),
      e('e4', 'review', 'reject', 'revise'),
    ],
  };
}

async function waitPaused(runId) {
  return until(async () => {
    const r = await stack.api.getRun(runId);
    return r.status === 'paused' && r.pendingApprovals.length > 0 ? r : null;
  }, `run ${runId} to wait for approval`, 30_000);
}

test('the inbox lists approvals of two workflows, answers one in place, and the header count follows live', { timeout: TEST_TIMEOUT }, async () => {
  const alpha = await stack.api.createWorkflow('Alpha newsletter', reviewGraph('Send the newsletter?'));
  const beta = await stack.api.createWorkflow('Beta release notes', reviewGraph('Publish the release notes?'));
  for (const theme of ['light', 'dark']) {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await context.grantPermissions(['notifications']);
      // Record notifications the page shows (the real API still runs).
      await context.addInitScript(() => {
        const Real = window.Notification;
        window.__notes = [];
        class Recorded extends Real {
          constructor(title, opts) {
            super(title, opts);
            window.__notes.push({ title, body: opts?.body ?? '' });
          }
        }
        Object.defineProperty(Recorded, 'permission', { get: () => Real.permission });
        Recorded.requestPermission = (...a) => Real.requestPermission(...a);
        window.Notification = Recorded;
      });
      await page.goto('/approvals');
      await textMatches(page.locator(tid('server-status')), /Connected/, 'server status');
      await page.locator(tid('inbox')).waitFor();
      const count = page.locator(tid('approvals-count'));
      await textMatches(count, /^0$/, 'the header count before any run');
      await page.locator(tid('inbox-empty')).waitFor();
      await page.locator(tid('inbox-notify')).check();

      const seenBefore = notices.length;
      const ra = await stack.api.post('/api/runs', { workflowId: alpha.id, input: `alpha-${theme}` });
      const rb = await stack.api.post('/api/runs', { workflowId: beta.id, input: `beta-${theme}` });
      await waitPaused(ra.runId);
      await waitPaused(rb.runId);

      // Both show up without a reload, with the workflow, prompt and output.
      await textMatches(count, /^2$/, 'the header count with two waiting', 30_000);
      const itemA = page.locator(tid(`inbox-item-${ra.runId}-review`));
      const itemB = page.locator(tid(`inbox-item-${rb.runId}-review`));
      await itemA.waitFor();
      await itemB.waitFor();
      const textA = (await itemA.textContent()) ?? '';
      assert.match(textA, /Alpha newsletter/);
      assert.match(textA, /Send the newsletter\?/);
      assert.match(textA, new RegExp(`alpha-${theme}`));
      assert.match((await itemB.textContent()) ?? '', /Beta release notes[\s\S]*Publish the release notes\?/);
      const notes = await until(async () => {
        const n = await page.evaluate(() => window.__notes);
        return n.length >= 2 ? n : null;
      }, 'two browser notifications');
      assert.deepEqual(notes.map((n) => n.title).sort(), ['Approval needed: Alpha newsletter', 'Approval needed: Beta release notes']);
      await screenshot(page, `inbox-${theme}`);

      // Answer Alpha in place: it leaves, the count drops, the run goes on.
      await page.locator(tid(`inbox-note-${ra.runId}-review`)).fill('ship it');
      await page.locator(tid(`inbox-approve-${ra.runId}-review`)).click();
      await itemA.waitFor({ state: 'detached' });
      await textMatches(count, /^1$/, 'the header count after answering one');
      await until(async () => (await stack.api.getRun(ra.runId)).status === 'completed', 'the approved run to complete', 30_000);
      const done = await stack.api.getRun(ra.runId);
      assert.equal(done.nodes.find((n) => n.nodeId === 'publish').status, 'completed');

      // Beta answered elsewhere (the API): the inbox follows live.
      await stack.api.post(`/api/runs/${rb.runId}/approvals/review`, { decision: 'reject', note: 'no' });
      await itemB.waitFor({ state: 'detached', timeout: 30_000 });
      await textMatches(count, /^0$/, 'the header count after the other was answered elsewhere', 30_000);
      await page.locator(tid('inbox-empty')).waitFor();
      await screenshot(page, `inbox-empty-${theme}`);

      // One webhook post per wait, with run, node, prompt and a link.
      const mine = await until(() => {
        const m = notices.slice(seenBefore);
        return m.length >= 2 ? m : null;
      }, 'two webhook posts');
      assert.equal(notices.length - seenBefore, 2, 'exactly one post per wait');
      for (const [run, prompt] of [
        [ra, 'Send the newsletter?'],
        [rb, 'Publish the release notes?'],
      ]) {
        const n = mine.find((x) => x.body.runId === run.runId);
        assert.ok(n, `a post for run ${run.runId}`);
        assert.equal(n.contentType, 'application/json');
        assert.equal(n.body.event, 'wait_input');
        assert.equal(n.body.nodeId, 'review');
        assert.equal(n.body.prompt, prompt);
        assert.equal(n.body.link, `${stack.baseURL}/runs/${run.runId}`);
        assert.match(n.body.text, /Approval needed/);
      }
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});

test('the header count is live on other pages too', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Gamma', reviewGraph('Go?'));
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token });
  try {
    await page.goto(`/workflows/${wf.id}`);
    await textMatches(page.locator(tid('server-status')), /Connected/, 'server status');
    const count = page.locator(tid('approvals-count'));
    await textMatches(count, /^0$/, 'the header count');
    const r = await stack.api.post('/api/runs', { workflowId: wf.id });
    await waitPaused(r.runId);
    await textMatches(count, /^1$/, 'the header count while editing', 30_000);
    await page.locator(tid('approvals-link')).click();
    await page.locator(tid(`inbox-item-${r.runId}-review`)).waitFor();
    await page.locator(tid(`inbox-open-${r.runId}-review`)).click();
    await page.waitForURL(`**/runs/${r.runId}`);
    await page.locator(tid('approval-card-review')).waitFor();
    await page.locator(tid('approve-review')).click();
    await textMatches(count, /^0$/, 'the header count after approving on the run page', 30_000);
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});
