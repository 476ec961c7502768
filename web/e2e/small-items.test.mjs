// The smaller items, one test each: click-to-add never stacks,
// paste names the copy, the run blocker is one line, a skipped node says
// why, the runs list has a failure column and keeps its filters in the
// address, an endless agent loop and a provider without its key are
// listed as problems, messages name nodes as the canvas does (conditions
// counted from 1), the YAML template can be created, approvals name the
// node and show the last rejection, and the keyboard zooms and explains.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { contextPool, launchBrowser, screenshot } from './lib/browser.mjs';
import { startStack } from './lib/stack.mjs';
import {
  assertNoPageErrors,
  clickNode,
  openEditor,
  selectNode,
  settle,
  TEST_TIMEOUT,
  textMatches,
  tid,
  until,
  waitNodeStatus,
  waitRunStatus,
} from './lib/ui.mjs';

const SKIP_YAML = `name: Skips one
description: The check step's condition is false.
nodes:
  - id: fetch
    bash: echo fetched
  - id: check
    depends_on: [fetch]
    when: "$fetch.output == 'other'"
    bash: echo checked
  - id: after
    depends_on: [check]
    bash: echo after
`;

const FAIL_YAML = `name: Fails
description: Its one step exits 3.
nodes:
  - id: boom
    bash: "echo going down; exit 3"
`;

const CLAUDE_YAML = `name: Claude without a key
description: provider claude, and no ANTHROPIC_API_KEY on the server.
provider: claude
nodes:
  - id: ask
    prompt: Say hello
`;

let stack;
let browser;
let pool;

before(async () => {
  stack = await startStack({
    name: 'small-items',
    latency: '50ms',
    workflows: { 'skips.yaml': SKIP_YAML, 'fails.yaml': FAIL_YAML, 'claude.yaml': CLAUDE_YAML },
  });
  browser = await launchBrowser();
  pool = contextPool(browser, { baseURL: stack.baseURL, token: stack.token });
});
after(async () => {
  await pool?.close();
  await browser?.close();
  await stack?.stop();
});

const n = (id, type, x, y, data = {}) => ({ id, type, position: { x, y }, data });
const e = (id, source, sourceHandle, target) => ({ id, source, target, sourceHandle, targetHandle: 'input' });

async function page(theme = 'light', size = { width: 1440, height: 900 }) {
  return pool.open(theme, size);
}

test('click-to-add never stacks nodes on one spot, even once the view is full', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page: pg, errors } = await page('light', { width: 1100, height: 800 });
  try {
    await openEditor(pg, '/workflows/new');
    await pg.locator(tid('toggle-left-panel')).click(); // collapsed at 1100 px
    for (let i = 0; i < 14; i++) await pg.locator(tid('palette-agent')).click();
    await until(async () => (await pg.locator('[data-node-type]').count()) === 16, '16 nodes');
    const spots = await pg.$$eval('.react-flow__node', (els) => els.map((el) => el.style.transform));
    assert.equal(new Set(spots).size, spots.length, `no two nodes on one spot: ${spots.join(' ')}`);
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('a pasted agent is named as a copy', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Paste', { nodes: [n('n1', 'start', 0, 0), n('n2', 'agent', 300, 0, { agentName: 'Writer', userPrompt: 'x' })], edges: [e('e1', 'n1', 'output', 'n2')] });
  const { context, page: pg, errors } = await page();
  try {
    await openEditor(pg, `/workflows/${wf.id}`);
    await selectNode(pg, 'n2');
    await pg.keyboard.press('Control+c');
    await pg.keyboard.press('Control+v');
    await pg.keyboard.press('Control+v');
    await textMatches(pg.locator(tid('node-n3')), /Writer \(copy\)/, 'the first copy');
    await textMatches(pg.locator(tid('node-n4')), /Writer \(copy 2\)/, 'the second copy');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('the run blocker is one line at 1100 px and opens the problems', { timeout: TEST_TIMEOUT }, async () => {
  // An if node with nowhere to go: an error (if_no_branch).
  const wf = await stack.api.createWorkflow('Blocked', {
    nodes: [n('n1', 'start', 0, 0), n('n2', 'if', 300, 0, { conditions: [{ operator: 'equal', value: 'x' }] })],
    edges: [e('e1', 'n1', 'output', 'n2')],
  });
  for (const theme of ['light', 'dark']) {
    const { context, page: pg, errors } = await page(theme, { width: 1100, height: 800 });
    try {
      await openEditor(pg, `/workflows/${wf.id}`);
      const blocker = pg.locator(tid('run-blocker'));
      await textMatches(blocker, /^Fix \d+ errors? to run$/, 'the blocker');
      const box = await blocker.boundingBox();
      assert.ok(box.height < 26, `one line (${box.height} px high)`);
      await pg.locator(tid('tab-inspect')).click();
      await blocker.locator('button').click();
      await pg.locator(tid('problems-panel')).waitFor();
      await screenshot(pg, `small-run-blocker-${theme}-1100`);
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});

test('a skipped step says why, on the node, in its details and in the log', { timeout: TEST_TIMEOUT }, async () => {
  const run = await stack.api.post('/api/runs', { workflowId: 'yaml.skips.yaml' });
  for (const theme of ['light', 'dark']) {
    for (const size of [{ width: 1440, height: 900 }, { width: 1100, height: 800 }]) {
      const { context, page: pg, errors } = await page(theme, size);
      try {
        await pg.goto(`/runs/${run.runId}`);
        await waitRunStatus(pg, 'completed');
        await waitNodeStatus(pg, 'check', 'skipped');
        await textMatches(pg.locator(tid('node-skip-check')), /skipped: when condition "\$fetch\.output == 'other'" is false/, 'the node says why');
        await textMatches(pg.locator(tid('node-skip-after')), /skipped: trigger_rule all_success: check skipped/, 'and its dependent too');
        await clickNode(pg, 'check');
        await textMatches(pg.locator(tid('node-details-skip')), /Skipped: when condition/, 'the details say why');
        const lines = await pg.$$eval('[data-testid="log-line"][data-node-id="check"]', (els) => els.map((x) => x.textContent));
        assert.ok(lines.some((l) => /skipped — when condition/.test(l)), `the log says why: ${JSON.stringify(lines)}`);
        await screenshot(pg, `small-skipped-${theme}-${size.width}`);
        assertNoPageErrors(errors);
      } finally {
        await context.close();
      }
    }
  }
});

test('the runs list shows why runs failed, and its filters are in the address', { timeout: TEST_TIMEOUT }, async () => {
  const run = await stack.api.post('/api/runs', { workflowId: 'yaml.fails.yaml' });
  await until(async () => (await stack.api.getRun(run.runId)).status === 'failed', 'the run failed', 30_000);
  for (const theme of ['light', 'dark']) {
    const { context, page: pg, errors } = await page(theme);
    try {
      await pg.goto('/runs');
      await textMatches(pg.locator(tid(`runs-failure-${run.runId}`)), /boom|exit status 3/, 'the failure column');
      await pg.locator(tid('runs-status')).selectOption('failed');
      await until(() => new URL(pg.url()).search === '?status=failed', 'the filter in the address');
      await pg.locator(tid('runs-workflow')).selectOption('yaml.fails.yaml');
      await until(() => new URL(pg.url()).searchParams.get('workflow') === 'yaml.fails.yaml', 'both filters in the address');
      await pg.reload();
      await pg.locator(tid(`runs-row-${run.runId}`)).waitFor();
      assert.equal(await pg.locator(tid('runs-status')).inputValue(), 'failed', 'kept by a reload');
      // The workflow options load after the rows: the select shows the
      // filter once its option is there.
      await until(async () => (await pg.locator(tid('runs-workflow')).inputValue()) === 'yaml.fails.yaml',
        'the workflow filter kept by a reload');
      await screenshot(pg, `small-runs-failure-${theme}`);
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});

test('an agent → agent loop with no way out is a problem; so is a provider without its key', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Endless', {
    nodes: [n('n1', 'start', 0, 0), n('n2', 'agent', 300, 0, { agentName: 'Writer', userPrompt: 'x' }), n('n3', 'agent', 600, 0, { agentName: 'Critic', userPrompt: 'y' })],
    edges: [e('e1', 'n1', 'output', 'n2'), e('e2', 'n2', 'output', 'n3'), e('e3', 'n3', 'output', 'n2')],
  });
  for (const theme of ['light', 'dark']) {
    const { context, page: pg, errors } = await page(theme);
    try {
      await openEditor(pg, `/workflows/${wf.id}`);
      await pg.locator(tid('tab-problems')).click();
      const item = pg.locator('[data-problem-code="endless_loop"]');
      await item.waitFor();
      await textMatches(item, /“Writer” → “Critic” → “Writer” loops with no if or approval node/, 'the loop named');
      await screenshot(pg, `small-endless-loop-${theme}`);

      await openEditor(pg, '/workflows/yaml.claude.yaml');
      await pg.locator(tid('tab-problems')).click();
      const cannot = pg.locator('[data-problem-code="cannot_run"]');
      await textMatches(cannot, /Cannot run here: step ask: provider claude is not configured: set ANTHROPIC_API_KEY/, 'why it cannot run');
      assert.doesNotMatch((await pg.locator(tid('problems-panel')).textContent()) ?? '', /No problems found/);
      await textMatches(pg.locator(tid('tab-problems')), /Problems \(1\)/, 'counted in the tab');
      await screenshot(pg, `small-cannot-run-${theme}`);
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});

test('messages name nodes as the canvas does, and count conditions from 1 like the inspector', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Messages', {
    nodes: [
      n('n1', 'start', 0, 0),
      n('n2', 'if', 300, 0, { conditions: [{ operator: 'equal', value: 'a' }, { operator: 'equal', value: '' }] }),
      n('n3', 'agent', 600, 0, { agentName: 'Writer', userPrompt: 'x' }),
    ],
    edges: [e('e1', 'n1', 'output', 'n2'), e('e6', 'n2', 'condition-0', 'n3'), e('e7', 'n2', 'condition-5', 'n3')],
  });
  const { context, page: pg, errors } = await page();
  try {
    await openEditor(pg, `/workflows/${wf.id}`);
    await pg.locator(tid('tab-problems')).click();
    const text = await textMatches(pg.locator(tid('problems-panel')), /condition 2 has a blank value/, 'condition 2, no handle id');
    assert.doesNotMatch(text, /edge "e7"|handle condition-1\)/, `no internal ids: ${text}`);
    assert.match(text, /the edge if node n2 → “Writer”/, 'the edge named by its ends');
    await selectNode(pg, 'n2');
    assert.equal(await pg.locator(`${tid('condition-row-1')} .conditions__idx`).textContent(), '2', 'the inspector counts from 1 too');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('the YAML template card creates its file', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page: pg, errors } = await page('dark');
  try {
    await openEditor(pg, '/');
    await pg.locator(tid('open-templates')).click();
    const card = pg.locator(tid('template-yaml-review'));
    assert.doesNotMatch((await card.textContent()) ?? '', /read-only/, 'the card no longer says YAML is read-only');
    await screenshot(pg, 'small-yaml-template-dark');
    await pg.locator(tid('template-create-yaml-review')).click();
    await pg.waitForURL(/\/workflows\/yaml\.review-change\.yaml$/);
    await until(async () => (await pg.locator('[data-node-type]').count()) >= 3, 'its steps on the canvas');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('approvals name the node and show the last round’s rejection note (run page, canvas, inbox)', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Review loop', {
    nodes: [
      n('n1', 'start', 0, 0, { initialInput: 'a poem' }),
      n('n2', 'agent', 300, 0, { agentName: 'Writer', userPrompt: 'Write {{PREVIOUS_OUTPUT}} $REJECTION_REASON' }),
      n('n3', 'approval', 600, 0, { prompt: 'Ship it?' }),
    ],
    edges: [e('e1', 'n1', 'output', 'n2'), e('e2', 'n2', 'output', 'n3'), e('e3', 'n3', 'reject', 'n2')],
  });
  const run = await stack.api.post('/api/runs', { workflowId: wf.id });
  await until(async () => (await stack.api.getRun(run.runId)).status === 'paused', 'paused at the approval', 30_000);
  await stack.api.post(`/api/runs/${run.runId}/approvals/n3`, { decision: 'reject', note: 'make it shorter' });
  await until(async () => {
    const r = await stack.api.getRun(run.runId);
    return r.status === 'paused' && (r.pendingApprovals ?? []).length === 1;
  }, 'waiting again', 30_000);
  for (const theme of ['light', 'dark']) {
    for (const size of [{ width: 1440, height: 900 }, { width: 1100, height: 800 }]) {
      const { context, page: pg, errors } = await page(theme, size);
      try {
        await pg.goto(`/runs/${run.runId}`);
        await textMatches(pg.locator(tid('approval-name-n3')), /^approval of “Writer”$/, 'named by what it approves');
        await textMatches(pg.locator(tid('approval-previous-n3')), /Last round you rejected it: make it shorter/, 'the last rejection');
        await textMatches(pg.locator(tid('node-approval-previous-n3')), /make it shorter/, 'on the canvas too');
        await screenshot(pg, `small-approval-${theme}-${size.width}`);
        await pg.goto('/approvals');
        await textMatches(pg.locator(tid(`inbox-name-${run.runId}-n3`)), /approval of “Writer”/, 'the inbox names it');
        await textMatches(pg.locator(tid(`inbox-previous-${run.runId}-n3`)), /make it shorter/, 'with the last note');
        if (size.width === 1440) await screenshot(pg, `small-inbox-${theme}`);
        assertNoPageErrors(errors);
      } finally {
        await context.close();
      }
    }
  }
});

test('the keyboard zooms (+ − 0) and ? lists the shortcuts', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Keys', { nodes: [n('n1', 'start', 0, 0), n('n2', 'agent', 300, 0, { agentName: 'A', userPrompt: 'x' })], edges: [e('e1', 'n1', 'output', 'n2')] });
  for (const theme of ['light', 'dark']) {
    const { context, page: pg, errors } = await page(theme);
    try {
      await openEditor(pg, `/workflows/${wf.id}`);
      await settle(pg);
      const zoom = () => pg.locator('.react-flow__viewport').first().evaluate((el) => new DOMMatrixReadOnly(getComputedStyle(el).transform).a);
      const z0 = await zoom();
      await pg.locator(tid('canvas')).click({ position: { x: 5, y: 5 } });
      await pg.keyboard.press('-');
      await settle(pg);
      const z1 = await zoom();
      assert.ok(z1 < z0, `- zooms out (${z0} → ${z1})`);
      await pg.keyboard.press('+');
      await pg.keyboard.press('+');
      await settle(pg);
      assert.ok((await zoom()) > z1, '+ zooms in');
      await pg.keyboard.press('0');
      await settle(pg);
      assert.ok(Math.abs((await zoom()) - z0) < 0.01, '0 fits again');
      await pg.keyboard.press('?');
      await pg.locator(tid('shortcuts-help')).waitFor();
      await textMatches(pg.locator(tid('shortcuts-help')), /Ctrl\+F.*Find a node/s, 'the list');
      await screenshot(pg, `small-shortcuts-${theme}`);
      await pg.keyboard.press('Escape');
      await pg.locator(tid('shortcuts-help')).waitFor({ state: 'detached' });
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});
