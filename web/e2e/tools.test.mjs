// Agents that call tools, driven by a fake-LLM script (fake-llm --script):
// the run page's transcript of turns and calls (live, after a reload, in
// replay; a subagent's calls nested under its call), tool calls that wait
// for a reviewer (approved from the run panel and the inbox with their
// arguments and diff, rejected on the canvas node), the agent inspector's
// Tools section saved into the graph, and a YAML include drawn as a group.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { launchBrowser, newPage, screenshot } from './lib/browser.mjs';
import { REPO_DIR, startStack } from './lib/stack.mjs';
import {
  assertNoPageErrors,
  clickNode,
  clickRun,
  expectedLineSeqs,
  logLines,
  nodeIds,
  openEditor,
  selectNode,
  settle,
  TEST_TIMEOUT,
  textMatches,
  tid,
  until,
  waitNodeStatus,
  waitRunnable,
  waitRunStatus,
} from './lib/ui.mjs';

// The fake model's turns, by the agent's first user message. JSON is YAML.
const SCRIPT = {
  rules: [
    {
      name: 'lead: tools, a subagent, a Bash call a reviewer lets through, a failing Read',
      match: 'inspect the workspace',
      final: 'All done.',
      turns: [
        { text: 'Let me look around.', tool_calls: [{ name: 'Write', arguments: { file_path: 'notes.txt', content: 'hello tools\n' } }] },
        {
          tool_calls: [
            { name: 'Read', arguments: { file_path: 'notes.txt' } },
            { name: 'subagent_helper_n3', arguments: { input: 'summarise notes.txt' } },
          ],
        },
        { text: 'Now the shell.', tool_calls: [{ name: 'Bash', arguments: { command: 'echo from-bash && cat notes.txt' } }] },
        { tool_calls: [{ name: 'Read', arguments: { file_path: 'missing.txt' } }] },
      ],
    },
    {
      name: 'helper subagent: reads the notes',
      match: 'summarise notes.txt',
      final: 'notes say: {{last_result}}',
      turns: [{ text: 'Reading.', tool_calls: [{ name: 'Read', arguments: { file_path: 'notes.txt' } }] }],
    },
    {
      name: 'writer: a Write that waits for a reviewer',
      match: 'update the greeting',
      final: 'finished',
      turns: [
        { tool_calls: [{ name: 'Bash', arguments: { command: "printf 'hello\\nold line\\n' > greeting.txt" } }] },
        { text: 'Changing the second line.', tool_calls: [{ name: 'Write', arguments: { file_path: 'greeting.txt', content: 'hello\nnew line\n' } }] },
        { if_result_contains: 'denied by the reviewer', text: 'Understood: {{last_result}}' },
        { text: 'Wrote it: {{last_result}}' },
      ],
    },
  ],
};

const n = (id, type, x, y, data) => ({ id, type, position: { x, y }, data });
const e = (id, source, sourceHandle, target, targetHandle = 'input') => ({ id, source, target, sourceHandle, targetHandle });

/** start → Lead (Write, Read, Bash; `echo` commands need approval) with a Helper subagent (Read). */
function leadGraph() {
  return {
    nodes: [
      n('n1', 'start', 0, 80, { initialInput: 'inspect the workspace' }),
      n('n2', 'agent', 300, 80, {
        agentName: 'Lead',
        userPrompt: '{{PREVIOUS_OUTPUT}}',
        tools: { web_search: false, subagents: true, builtin: ['Read', 'Write', 'Bash'], approve: ['Bash(echo:*)'] },
      }),
      n('n3', 'agent', 300, 360, { agentName: 'Helper', systemPrompt: 'You read notes.', userPrompt: '', tools: { web_search: false, subagents: false, builtin: ['Read'] } }),
    ],
    edges: [e('e1', 'n1', 'output', 'n2'), e('e2', 'n2', 'subagent', 'n3')],
  };
}

/** start → Writer (Bash, Write; every Write needs approval). */
function writerGraph() {
  return {
    nodes: [
      n('n1', 'start', 0, 80, { initialInput: 'update the greeting' }),
      n('n2', 'agent', 300, 80, {
        agentName: 'Writer',
        userPrompt: '{{PREVIOUS_OUTPUT}}',
        tools: { web_search: false, subagents: false, builtin: ['Write', 'Bash'], approve: ['Write'] },
      }),
    ],
    edges: [e('e1', 'n1', 'output', 'n2')],
  };
}

// Archon's include: a parent that inlines a block (yamlflow's test data).
const INCLUDE_DIR = resolve(REPO_DIR, 'yamlflow/testdata/include');

let stack;
let browser;
let scriptDir;

before(async () => {
  scriptDir = mkdtempSync(join(tmpdir(), 'switchyard-e2e-tools-'));
  const script = join(scriptDir, 'script.json');
  writeFileSync(script, JSON.stringify(SCRIPT, null, 2));
  // MCP servers the inspector offers; no agent here starts them.
  const mcp = join(scriptDir, 'mcp.json');
  writeFileSync(mcp, JSON.stringify({ mcpServers: { github: { command: 'true' }, docs: { type: 'http', url: 'http://127.0.0.1:9/mcp' } } }));
  stack = await startStack({
    name: 'tools',
    latency: '200ms',
    fakeArgs: ['--script', script],
    args: ['--mcp-config', mcp],
    workflows: {
      'parent.yaml': readFileSync(join(INCLUDE_DIR, 'parent.yaml'), 'utf8'),
      'block.yaml': readFileSync(join(INCLUDE_DIR, 'block.yaml'), 'utf8'),
    },
  });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await stack?.stop();
  if (scriptDir) rmSync(scriptDir, { recursive: true, force: true });
});

/** Each call of the transcript on the page: test id, tool, status. */
async function transcriptCalls(page) {
  return page.$$eval('[data-testid="node-transcript"] [data-testid^="tool-call-"]', (els) =>
    els.map((el) => ({
      id: el.getAttribute('data-testid').replace(/^tool-call-/, ''),
      tool: el.getAttribute('data-tool'),
      status: el.getAttribute('data-status'),
      nested: !!el.parentElement?.closest('.transcript--nested'),
    })),
  );
}

async function waitCall(page, tool, status, what) {
  return until(async () => {
    const calls = await transcriptCalls(page);
    return calls.find((c) => c.tool === tool && c.status === status && !c.nested);
  }, what ?? `a ${tool} call with status ${status}`);
}

async function waitApiRun(runId, status) {
  return until(async () => {
    const r = await stack.api.getRun(runId);
    return r.status === status ? r : null;
  }, `run ${runId} to be ${status}`, 30_000);
}

test('tool calls stream into the run page, nest subagent calls, survive a reload and replay', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Lead with tools', leadGraph());
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await openEditor(page, `/workflows/${wf.id}`);
    await until(async () => (await nodeIds(page)).length === 3, 'the graph on the canvas');
    await waitRunnable(page);
    const runId = await clickRun(page);
    await settle(page);
    await clickNode(page, 'n2');
    await page.locator(tid('node-details')).waitFor();

    // The Bash call waits for a reviewer: everything before it arrived live.
    await waitNodeStatus(page, 'n2', 'waiting');
    await textMatches(page.locator(tid('node-wait-tool-n2')), /waits for approval of Bash: echo from-bash && cat notes\.txt/, 'the node says which tool it waits on');
    await waitCall(page, 'Bash', 'waiting');
    const live = await transcriptCalls(page);
    assert.deepEqual(
      live.map((c) => [c.tool, c.status, c.nested]),
      [
        ['Write', 'ok', false],
        ['Read', 'ok', false],
        ['subagent_helper_n3', 'ok', false],
        ['Read', 'ok', true],
        ['Bash', 'waiting', false],
      ],
      'the calls so far, the helper subagent’s Read nested under its call',
    );
    const sub = live.find((c) => c.tool === 'subagent_helper_n3');
    await textMatches(page.locator(tid(`tool-output-${sub.id}`)), /notes say: .*hello tools/, 'the subagent call’s result');
    // The run panel shows the waiting call with its arguments.
    const card = page.locator(tid('approval-card-n2-tool'));
    assert.equal(await card.getAttribute('data-tool'), 'Bash');
    await textMatches(page.locator(tid('approval-card-n2-args')), /"command": "echo from-bash && cat notes\.txt"/, 'the Bash arguments on the card');
    await page.locator(tid('approve-n2')).click();

    await waitRunStatus(page, 'completed');
    await waitCall(page, 'Bash', 'ok', 'the approved Bash call finished');
    const done = await transcriptCalls(page);
    assert.deepEqual(
      done.filter((c) => !c.nested).map((c) => [c.tool, c.status]),
      [
        ['Write', 'ok'],
        ['Read', 'ok'],
        ['subagent_helper_n3', 'ok'],
        ['Bash', 'ok'],
        ['Read', 'error'],
      ],
    );
    const bash = done.find((c) => c.tool === 'Bash');
    await textMatches(page.locator(tid(`tool-decision-${bash.id}`)), /Approved by the reviewer/, 'the approval on the call');
    assert.match((await page.locator(tid(`tool-output-${bash.id}`)).textContent()) ?? '', /from-bash\s+hello tools/);
    const failed = done.filter((c) => c.tool === 'Read').at(-1);
    assert.match((await page.locator(tid(`tool-facts-${failed.id}`)).textContent()) ?? '', /^error · \d+ (ms|s) · \d+ B$/);
    assert.match((await page.locator(tid(`tool-args-${failed.id}`)).textContent()) ?? '', /"file_path": "missing\.txt"/);
    // Turn texts, in order.
    const turns = await page.$$eval('[data-testid="node-transcript"] > .transcript__turns > [data-testid="transcript-turn"] > .tturn__head', (els) =>
      els.map((el) => el.textContent),
    );
    assert.deepEqual(turns, ['Turn 1Let me look around.', 'Turn 2(no text)', 'Turn 3Now the shell.', 'Turn 4(no text)']);
    assert.equal((await page.locator(tid('node-details-output')).textContent())?.trim(), 'All done.');

    // The log: one line per event (a turn's streamed text and the turn share
    // one), a line per tool call and result, nested under the node.
    const lines = await logLines(page);
    const events = await stack.api.events(runId);
    assert.deepEqual(
      lines.map((l) => l.seq),
      expectedLineSeqs(events),
      'the log lines match the stored events',
    );
    for (const type of ['tool_call', 'tool_result']) {
      assert.deepEqual(
        lines.filter((l) => l.type === type).map((l) => l.seq),
        events.filter((ev) => ev.type === type).map((ev) => ev.seq),
        `a log line per ${type} event`,
      );
    }
    assert.equal(lines.filter((l) => l.type === 'llm_turn').length, events.filter((ev) => ev.type === 'llm_turn').length, 'a line per model turn');
    assert.ok((await page.locator('[data-testid="log-line"][data-type="tool_call"] .log-line__nest').count()) >= 5, 'tool calls are nested in the log');
    await page.locator(`${tid('node-transcript')} details summary`).first().click(); // open the first call's arguments
    await screenshot(page, 'tools-run-transcript-light');
    // Further down: the subagent call with its own turn nested under it, the approved Bash call.
    await page.locator(tid(`tool-output-${bash.id}`)).locator('..').locator('summary').click();
    await page.locator(tid(`tool-call-${sub.id}`)).scrollIntoViewIfNeeded();
    await screenshot(page, 'tools-run-transcript-nested-light');
    const liveText = await page.locator(tid('node-transcript')).textContent();

    // A reload rebuilds the same transcript from the stored events.
    await page.reload();
    await page.locator(tid('run-canvas')).waitFor();
    await waitRunStatus(page, 'completed');
    await settle(page);
    await clickNode(page, 'n2');
    await until(async () => (await transcriptCalls(page)).length === done.length, 'the transcript after the reload');
    assert.deepEqual(await transcriptCalls(page), done);
    assert.equal(await page.locator(tid('node-transcript')).textContent(), liveText, 'the same transcript after a reload');

    // Replay: as of the first tool_call, the Write call is running; as of its result, ok.
    const firstCall = events.findIndex((ev) => ev.type === 'tool_call');
    const firstResult = events.findIndex((ev) => ev.type === 'tool_result');
    await page.locator(tid('replay-toggle')).click();
    await textMatches(page.locator(tid('replay-pos')), new RegExp(`^0 / ${events.length}$`), 'the replay loaded');
    await page.locator(tid('replay-range')).fill(String(firstCall + 1));
    await until(async () => {
      const c = await transcriptCalls(page);
      return c.length === 1 && c[0].tool === 'Write' && c[0].status === 'running';
    }, 'the Write call running, as of its tool_call event');
    await page.locator(tid('replay-range')).fill(String(firstResult + 1));
    await until(async () => (await transcriptCalls(page))[0]?.status === 'ok', 'the Write call ok, as of its result');
    await page.locator(tid('replay-toggle')).click();
    assertNoPageErrors(errors);

    // The same transcript in the dark theme.
    const dark = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
    try {
      await dark.page.goto(`/runs/${runId}`);
      await waitRunStatus(dark.page, 'completed');
      await settle(dark.page);
      await clickNode(dark.page, 'n2');
      await until(async () => (await transcriptCalls(dark.page)).length === done.length, 'the transcript (dark)');
      await dark.page.locator(`${tid('node-transcript')} details summary`).first().click();
      await screenshot(dark.page, 'tools-run-transcript-dark');
      assertNoPageErrors(dark.errors);
    } finally {
      await dark.context.close();
    }
  } finally {
    await context.close();
  }
});

test('the agent inspector saves the tools checklist, approvals and patterns into the graph', { timeout: TEST_TIMEOUT }, async () => {
  const graph = {
    nodes: [
      n('n1', 'start', 0, 80, { initialInput: 'x' }),
      n('n2', 'agent', 300, 80, { agentName: 'Coder', userPrompt: '{{PREVIOUS_OUTPUT}}', tools: { web_search: false, subagents: false } }),
      n('n3', 'agent', 620, 80, { agentName: 'Untouched', userPrompt: '{{PREVIOUS_OUTPUT}}' }),
    ],
    edges: [e('e1', 'n1', 'output', 'n2'), e('e2', 'n2', 'output', 'n3')],
  };
  const wf = await stack.api.createWorkflow('Inspector tools', graph);
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await openEditor(page, `/workflows/${wf.id}`);
    await until(async () => (await nodeIds(page)).length === 3, 'the graph on the canvas');
    await selectNode(page, 'n2');
    // Off by default; approval toggles only for tools that are on.
    for (const t of ['Read', 'Write', 'Edit', 'Glob', 'Grep', 'Bash', 'LS']) {
      assert.equal(await page.locator(tid(`inspector-tool-${t}`)).isChecked(), false, `${t} is off`);
      assert.equal(await page.locator(tid(`inspector-approve-${t}`)).isDisabled(), true, `${t}'s approval toggle waits for the tool`);
    }
    // The MCP servers of serve --mcp-config, from GET /api/config.
    assert.deepEqual((await page.locator(`${tid('inspector-mcp')} label`).allTextContents()).sort(), ['docs', 'github']);
    assert.equal(await page.locator(tid('inspector-mcp-none')).count(), 0);
    await page.locator(tid('inspector-mcp-github')).check();
    await page.locator(tid('inspector-tool-Write')).check();
    await page.locator(tid('inspector-approve-Write')).check();
    await page.locator(tid('inspector-tool-Read')).check();
    await page.locator(tid('inspector-tool-Bash')).check();
    await page.locator(tid('inspector-approve-patterns')).fill('Bash(git push:*)\n\nmcp__github__create_*');
    await textMatches(page.locator(`${tid('node-n2')} .sy-node__line`).first(), /Read.*Write ⚑.*Bash.*mcp:github.*⚑ 2/, 'the node shows its tools');
    await screenshot(page, 'tools-inspector-light');
    await page.locator(tid('save')).click();
    await page.locator(tid('dirty-indicator')).waitFor({ state: 'detached' });
    const saved = await stack.api.get(`/api/workflows/${wf.id}`);
    const data = Object.fromEntries(saved.graph.nodes.map((x) => [x.id, x.data]));
    assert.deepEqual(data.n2.tools, {
      web_search: false,
      subagents: false,
      builtin: ['Read', 'Write', 'Bash'],
      approve: ['Write', 'Bash(git push:*)', 'mcp__github__create_*'],
      mcp: ['github'],
    });
    assert.deepEqual(data.n3, { agentName: 'Untouched', userPrompt: '{{PREVIOUS_OUTPUT}}' }, 'an agent not edited keeps no tools key');

    // Turning a tool off drops its approval too.
    await page.locator(tid('inspector-tool-Write')).uncheck();
    await page.locator(tid('save')).click();
    await page.locator(tid('dirty-indicator')).waitFor({ state: 'detached' });
    const again = await stack.api.get(`/api/workflows/${wf.id}`);
    assert.deepEqual(again.graph.nodes.find((x) => x.id === 'n2').data.tools, {
      web_search: false,
      subagents: false,
      builtin: ['Read', 'Bash'],
      approve: ['Bash(git push:*)', 'mcp__github__create_*'],
      mcp: ['github'],
    });
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('a Write waiting for a reviewer is approved from the inbox, with its arguments and diff', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Greeting writer', writerGraph());
  const run = await stack.api.post('/api/runs', { workflowId: wf.id });
  const runId = run.runId;
  const paused = await waitApiRun(runId, 'paused');
  assert.equal(paused.pendingApprovals[0].tool.tool, 'Write');
  const item = `inbox-item-${runId}-n2`;
  for (const theme of ['light', 'dark']) {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await page.goto('/approvals');
      await page.locator(tid(item)).waitFor();
      assert.equal(await page.locator(tid(`${item}-tool`)).getAttribute('data-tool'), 'Write');
      await textMatches(page.locator(tid(item)), /Allow Write greeting\.txt\?/, 'the prompt');
      const args = (await page.locator(tid(`${item}-args`)).textContent()) ?? '';
      assert.match(args, /"file_path": "greeting\.txt"/);
      assert.match(args, /"content": "hello\\nnew line\\n"/);
      const diff = page.locator(tid(`${item}-diff`));
      assert.deepEqual(await diff.locator('.diff__line--del').allTextContents(), ['-old line\n']);
      assert.deepEqual(await diff.locator('.diff__line--add').allTextContents(), ['+new line\n']);
      assert.equal(await diff.locator('.diff__line--hunk').count(), 1);
      await screenshot(page, `tools-inbox-card-${theme}`);
      if (theme === 'dark') {
        await page.locator(tid(`inbox-note-${runId}-n2`)).fill('looks right');
        await page.locator(tid(`inbox-approve-${runId}-n2`)).click();
        await page.locator(tid(item)).waitFor({ state: 'detached' });
      }
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
  const doneRun = await waitApiRun(runId, 'completed');
  assert.match(doneRun.outputs.n2, /^Wrote it: /);
  const events = await stack.api.events(runId);
  const decision = events.find((ev) => ev.type === 'input_received');
  assert.deepEqual([decision.data.decision, decision.data.note, decision.data.tool], ['approve', 'looks right', 'Write']);
  const result = events.find((ev) => ev.type === 'tool_result' && ev.data.tool === 'Write');
  assert.equal(result.data.ok, true);
});

test('a Write waiting for a reviewer is rejected on the canvas node; the model gets the note', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Greeting writer (canvas)', writerGraph());
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
  try {
    await openEditor(page, `/workflows/${wf.id}`);
    await until(async () => (await nodeIds(page)).length === 2, 'the graph on the canvas');
    await waitRunnable(page);
    const runId = await clickRun(page);
    await waitNodeStatus(page, 'n2', 'waiting');
    await textMatches(page.locator(tid('node-wait-tool-n2')), /waits for approval of Write greeting\.txt/, 'the waiting node names the tool');
    const form = page.locator(tid('node-approval-form-n2'));
    await form.waitFor();
    assert.equal(await page.locator(tid('node-approval-n2-tool')).getAttribute('data-tool'), 'Write');
    assert.deepEqual(await page.locator(`${tid('node-approval-n2-diff')} .diff__line--add`).allTextContents(), ['+new line\n']);
    await settle(page);
    await screenshot(page, 'tools-canvas-approval-dark');
    await page.locator(tid('node-approval-note-n2')).fill('use a different file');
    await page.locator(tid('node-reject-n2')).click();
    await waitRunStatus(page, 'completed');
    await form.waitFor({ state: 'detached' });
    await clickNode(page, 'n2');
    const write = await waitCall(page, 'Write', 'denied');
    await textMatches(page.locator(tid(`tool-decision-${write.id}`)), /Rejected by the reviewer: use a different file/, 'the rejection on the call');
    assert.equal((await page.locator(tid(`tool-output-${write.id}`)).textContent())?.trim(), 'denied by the reviewer: use a different file');
    const run = await stack.api.getRun(runId);
    assert.equal(run.outputs.n2, 'Understood: denied by the reviewer: use a different file');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('a YAML include is drawn as a labelled group; its steps are read-only', { timeout: TEST_TIMEOUT }, async () => {
  const list = await stack.api.get('/api/workflows');
  const wf = list.find((w) => w.kind === 'yaml' && w.name === 'parent');
  assert.ok(wf, `the server lists parent.yaml: ${JSON.stringify(list.map((w) => w.name))}`);
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await openEditor(page, `/workflows/${encodeURIComponent(wf.id)}`);
    await until(async () => (await nodeIds(page)).length === 10, 'the parent’s steps and both includes’ steps');
    await settle(page);
    for (const [g, label] of [
      ['review', 'block'],
      ['again', 'block.yaml'],
    ]) {
      const box = page.locator(tid(`group-${g}`));
      await textMatches(box, new RegExp(`include\\s*${label.replace('.', '\\.')}\\s*${g}`), `the ${g} group's label`);
      const b = await box.boundingBox();
      for (const member of ['start', 'mid', 'end', 'side']) {
        const m = await page.locator(tid(`node-${g}__${member}`)).boundingBox();
        assert.ok(
          m.x >= b.x && m.y >= b.y && m.x + m.width <= b.x + b.width + 1 && m.y + m.height <= b.y + b.height + 1,
          `${g}__${member} lies inside its group box`,
        );
      }
    }
    const first = await page.locator(tid('node-first')).boundingBox();
    const review = await page.locator(tid('group-review')).boundingBox();
    assert.ok(first.x + first.width <= review.x || first.y + first.height <= review.y || first.x >= review.x + review.width, 'a step of the file is outside the groups');
    await screenshot(page, 'tools-yaml-include-groups-light');
    // A step of the include: read-only, no Delete; a step of the file: editable.
    await selectNode(page, 'review__mid');
    await textMatches(page.locator(tid('inspector-included')), /included workflow block \(include step review\)/, 'the read-only note');
    assert.equal(await page.locator(tid('inspector-delete')).count(), 0);
    assert.equal(await page.locator(tid('inspector-yaml-main')).count(), 0);
    await selectNode(page, 'first');
    assert.equal(await page.locator(tid('inspector-included')).count(), 0);
    await page.locator(tid('inspector-yaml-main')).waitFor();
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});
