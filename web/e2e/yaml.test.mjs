// A YAML workflow from the server's --workflows folder: listed beside drawn
// ones, shown read-only (serve --read-only-workflows) with its step kinds,
// run from the editor, approved from the approvals panel (YAML steps have
// no on-canvas form). Editing YAML workflows: yaml-edit.test.mjs.
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
  textMatches,
  tid,
  until,
  waitNodeStatus,
  waitRunnable,
  waitRunStatus,
} from './lib/ui.mjs';

const REVIEW_YAML = `name: YAML review
description: A YAML workflow run from the browser.
nodes:
  - id: hello
    bash: echo hello-from-bash
  - id: ask
    prompt: "Say: $hello.output"
    depends_on: [hello]
  - id: gate
    depends_on: [ask]
    approval:
      message: Ship it?
`;

// Claude nodes need ANTHROPIC_API_KEY, which the test server does not have.
const CLAUDE_YAML = `name: Claude review
description: Needs Anthropic.
provider: claude
nodes:
  - id: ask
    prompt: hi
`;

let stack;
let browser;

useStack({ name: 'yaml', latency: '300ms', workflows: { 'review.yaml': REVIEW_YAML, 'claude.yaml': CLAUDE_YAML }, args: ['--read-only-workflows'] }, (s, b) => {
  stack = s;
  browser = b;
});

test('a YAML workflow is listed, shown read-only with its step kinds, and runs', { timeout: TEST_TIMEOUT }, async () => {
  const list = await stack.api.get('/api/workflows');
  const wf = list.find((w) => w.kind === 'yaml' && w.name === 'YAML review');
  assert.ok(wf, `the server lists the YAML workflow: ${JSON.stringify(list)}`);
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
  try {
    await openEditor(page, '/');
    const item = page.locator(tid(`workflow-item-${wf.id}`));
    await textMatches(item, /YAML review/, 'the list entry');
    await item.click();
    await until(async () => (await nodeIds(page)).length === 3, 'three YAML steps on the canvas');
    const badges = await page.$$eval('[data-node-type="yaml"] .sy-node__badge', (els) => els.map((e) => e.textContent));
    assert.deepEqual(badges, ['bash', 'prompt', 'approval'], 'each step shows its kind');
    // Read-only: no palette, no save, no undo.
    for (const id of ['palette-agent', 'palette-yaml-bash', 'save', 'undo', 'import', 'yaml-path']) assert.equal(await page.locator(tid(id)).count(), 0, `${id} is hidden`);
    assert.equal(await page.locator(tid('workflow-name')).getAttribute('readonly'), '');
    await waitRunnable(page);
    assert.equal(await page.locator(tid('tab-problems')).textContent(), 'Problems', 'no problems left over from the previous graph');
    await screenshot(page, 'yaml-editor-dark');

    const runId = await clickRun(page);
    await waitNodeStatus(page, 'gate', 'waiting');
    await page.locator(tid('approval-card-gate')).waitFor();
    await page.locator(tid('approval-note-gate')).fill('ship');
    await page.locator(tid('approve-gate')).click();
    await waitRunStatus(page, 'completed');
    await waitNodeStatus(page, 'gate', 'completed');
    const lines = await logLines(page);
    assert.ok(lines.some((l) => l.nodeId === 'hello' && /hello-from-bash/.test(l.text)), 'the bash output is logged');
    assert.ok(lines.some((l) => l.type === 'llm_response' && l.text === 'echo: Say: hello-from-bash'), 'the prompt reply is logged');
    const run = await stack.api.getRun(runId);
    assert.equal(run.status, 'completed');
    assert.equal(run.kind, 'yaml');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('a YAML workflow whose provider is not configured shows why Run is disabled', { timeout: TEST_TIMEOUT }, async () => {
  const list = await stack.api.get('/api/workflows');
  const wf = list.find((w) => w.name === 'Claude review');
  assert.ok(wf?.runBlocker?.includes('ANTHROPIC_API_KEY'), `the server gives the reason: ${JSON.stringify(wf)}`);
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
  try {
    await openEditor(page, '/');
    await page.locator(tid(`workflow-item-${wf.id}`)).click();
    await textMatches(page.locator(tid('run-blocker')), /ANTHROPIC_API_KEY/, 'the run blocker names the key');
    assert.equal(await page.locator(tid('run')).isDisabled(), true, 'Run is disabled');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});
