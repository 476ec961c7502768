// Editing a YAML workflow of the server's --workflows folder in the browser:
// as text (CodeMirror, live diagnostics, the canvas following the text) and
// on the canvas (gestures become minimal YAML edits of the file), saved
// with the file's hash; a file changed on disk meanwhile gets the conflict
// view.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import {
  assertNoPageErrors,
  clickEdge,
  clickNode,
  clickRun,
  connect,
  logLines,
  nodeIds,
  openEditor,
  TEST_TIMEOUT,
  textMatches,
  tid,
  until as untilUI,
  waitRunStatus,
} from './lib/ui.mjs';

// Every wait here is on a condition, with a deadline generous enough for a
// heavily loaded machine: a slow run waits longer, it does not fail.
const until = (fn, what, timeoutMs = 90_000) => untilUI(fn, what, timeoutMs);

const EDIT_YAML = `name: Edit me
description: A YAML workflow edited in the browser.
nodes:
  # the first step
  - id: first
    bash: echo first-out
  - id: second
    bash: echo second-out
`;

const CONFLICT_YAML = `name: Conflicted
description: Changed on disk while open.
nodes:
  - id: only
    bash: echo only
`;

let stack;
let browser;

useStack({ name: 'yaml-edit', latency: '100ms', workflows: { 'edit.yaml': EDIT_YAML, 'conflict.yaml': CONFLICT_YAML } }, (s, b) => {
  stack = s;
  browser = b;
});

const wfFile = (name) => join(stack.dataDir, 'workflows', name);

/** The text in the CodeMirror YAML editor, line by line. */
async function editorText(page) {
  return page.$$eval('[data-testid="yaml-text"] .cm-line', (els) => els.map((e) => e.textContent).join('\n'));
}

async function edgeIds(page) {
  return page.$$eval('.react-flow__edge', (els) => els.map((e) => e.getAttribute('data-id') ?? e.getAttribute('data-testid')));
}

/**
 * Sets fields of the selected step's settings in the inspector (each is
 * written to the file when Enter is pressed in it; a choice at once) until
 * the file says so (fileOk). Should the form show the file anew under a
 * field being filled on a loaded machine, the fields are filled again (the
 * edits are idempotent: a field that already shows the file's value writes
 * nothing).
 */
async function applySettings(page, fields, fileOk, what) {
  return until(async () => {
    for (const [field, value] of Object.entries(fields)) {
      const input = page.locator(tid(`inspector-yaml-${field}`));
      if (field === 'trigger_rule') await input.selectOption(value);
      else {
        await input.fill(value);
        await input.press('Enter');
      }
    }
    return untilUI(() => {
      const t = readFileSync(wfFile('edit.yaml'), 'utf8');
      return fileOk(t) ? t : null;
    }, what, 15_000).catch(() => null);
  }, what, 120_000);
}

async function openYaml(page, name) {
  const list = await stack.api.get('/api/workflows');
  const wf = list.find((w) => w.kind === 'yaml' && w.name === name);
  assert.ok(wf, `the server lists ${name}: ${JSON.stringify(list)}`);
  await openEditor(page, '/');
  await page.locator(tid(`workflow-item-${wf.id}`)).click();
  await page.locator(tid('yaml-view-split')).waitFor();
  return wf;
}

/** Puts the cursor at the end of the text and inserts `text` as one input (no auto-indent). */
async function appendText(page, text) {
  await page.locator(tid('yaml-text')).click();
  await page.keyboard.press('Control+End');
  await page.keyboard.insertText(text);
}

test('edit the text, see the canvas follow and diagnostics inline; draw an edge, see depends_on; save, reload, run', { timeout: TEST_TIMEOUT }, async () => {
  for (const theme of ['light', 'dark']) {
    if (theme === 'dark') writeFileSync(wfFile('edit.yaml'), EDIT_YAML); // start again from the same file
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      const wf = await openYaml(page, 'Edit me');
      await until(async () => (await nodeIds(page)).length === 2, 'two YAML steps on the canvas');
      assert.equal(await page.locator(tid('palette-yaml-bash')).count(), 1, 'the palette has the YAML step kinds');
      await page.locator(tid('yaml-view-split')).click();
      await until(async () => (await editorText(page)).includes('echo second-out'), 'the file text in the editor');

      // A step that waits for a node that does not exist: an inline error with its code.
      await appendText(page, '  - id: third\n    depends_on: [nope]\n    bash: echo third-out\n');
      await textMatches(page.locator(tid('dirty-indicator')), /unsaved/, 'the unsaved mark');
      await page.locator('.cm-lintRange-error').first().waitFor();
      await page.locator('.cm-lint-marker-error').first().hover();
      await textMatches(page.locator('.cm-tooltip-lint'), /unknown_dependency/, 'the diagnostic names its code');
      await until(async () => (await nodeIds(page)).includes('third'), 'the canvas shows the typed step');
      if (theme === 'light') await screenshot(page, 'yaml-edit-diagnostic-light');

      // Undo the insertion and type it right: the error goes, the edge second → third appears.
      await page.locator(tid('yaml-text')).click();
      await page.keyboard.press('Control+z');
      await until(async () => !(await editorText(page)).includes('third'), 'the insertion undone');
      await appendText(page, '  - id: third\n    depends_on: [second]\n    bash: echo third-$second.output\n');
      await until(async () => (await page.locator('.cm-lintRange-error').count()) === 0, 'no inline error left');
      await until(async () => (await edgeIds(page)).includes('second->third'), 'the canvas draws second → third');

      // Completion of a $id.output reference inside the text.
      await appendText(page, '  - id: fourth\n    depends_on: [third]\n    bash: echo $fi');
      const option = page.locator('.cm-tooltip-autocomplete li', { hasText: '$first.output' });
      await option.click();
      await until(async () => (await editorText(page)).includes('bash: echo $first.output'), 'the completed reference');

      // Ctrl+S saves the text as typed.
      await page.keyboard.press('Control+s');
      await until(async () => (await page.locator(tid('dirty-indicator')).count()) === 0, 'saved');
      const disk = readFileSync(wfFile('edit.yaml'), 'utf8');
      assert.match(disk, /- id: third\n {4}depends_on: \[second\]/, 'the file has the typed step');
      assert.match(disk, /# the first step/, 'the comment is kept');

      // An edge drawn on the canvas is a depends_on entry in the text and the file.
      await until(async () => (await nodeIds(page)).includes('fourth'), 'the fourth step on the canvas');
      await connect(page, 'first', 'output', 'fourth');
      await until(async () => /- id: fourth\n {4}depends_on: \[third, first\]/.test(await editorText(page)), 'depends_on of fourth in the text');
      assert.match(readFileSync(wfFile('edit.yaml'), 'utf8'), /depends_on: \[third, first\]/, 'the file has the new dependency');
      assert.match(readFileSync(wfFile('edit.yaml'), 'utf8'), /# the first step/, 'a canvas edit keeps the comment');
      await screenshot(page, `yaml-edit-split-${theme}`);

      // Reload: the saved text and its graph come back; it runs as edited.
      await page.reload();
      await page.locator(tid('yaml-view-split')).waitFor();
      await page.locator(tid('yaml-view-split')).click();
      await until(async () => (await editorText(page)).includes('depends_on: [third, first]'), 'the saved text after a reload');
      await until(async () => (await edgeIds(page)).includes('first->fourth'), 'the saved edge after a reload');
      if (theme === 'dark') {
        const runId = await clickRun(page);
        await waitRunStatus(page, 'completed');
        const lines = await logLines(page);
        assert.ok(lines.some((l) => l.nodeId === 'third' && /third-second-out/.test(l.text)), `third used $second.output: ${JSON.stringify(lines)}`);
        assert.ok(lines.some((l) => l.nodeId === 'fourth' && /first-out/.test(l.text)), 'fourth ran after first');
        const run = await stack.api.getRun(runId);
        assert.equal(run.status, 'completed');
        assert.equal(run.workflowId, wf.id);
      }
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});

test('canvas gestures edit the file: add a step from the palette, edit its main field, delete an edge and a node; drags keep positions', { timeout: TEST_TIMEOUT }, async () => {
  writeFileSync(wfFile('edit.yaml'), EDIT_YAML);
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    const wf = await openYaml(page, 'Edit me');
    await until(async () => (await nodeIds(page)).length === 2, 'two steps');
    await page.locator(tid('palette-yaml-prompt')).click();
    await until(async () => (await nodeIds(page)).includes('prompt_1'), 'the new prompt step');
    assert.match(readFileSync(wfFile('edit.yaml'), 'utf8'), /- id: prompt_1\n {4}prompt:/, 'addNode wrote the step');

    // Inspector: the step's main field, written as one set edit when it is left.
    await page.locator(tid('node-prompt_1')).click();
    await page.locator(tid('inspector-yaml-main')).fill('Summarize $second.output');
    await page.keyboard.press('Tab');
    await until(() => /prompt: Summarize \$second\.output/.test(readFileSync(wfFile('edit.yaml'), 'utf8')), 'the prompt in the file');

    // Connect, then delete the edge with the keyboard, then the node.
    await connect(page, 'second', 'output', 'prompt_1');
    await until(() => /depends_on: \[second\]/.test(readFileSync(wfFile('edit.yaml'), 'utf8')), 'the dependency in the file');
    await clickEdge(page, 'second->prompt_1');
    await page.keyboard.press('Delete');
    await until(() => !/depends_on/.test(readFileSync(wfFile('edit.yaml'), 'utf8')), 'removeDependency applied');
    await page.locator(tid('node-prompt_1')).click();
    await page.keyboard.press('Delete');
    await until(async () => !(await nodeIds(page)).includes('prompt_1'), 'the step is gone from the canvas');
    assert.equal(readFileSync(wfFile('edit.yaml'), 'utf8'), EDIT_YAML, 'add then delete gives back the file byte for byte');

    // A drag stores the node's position on the server (never in the file).
    const node = page.locator(tid('node-first'));
    const b = await node.boundingBox();
    await page.mouse.move(b.x + b.width / 2, b.y + 10);
    await page.mouse.down();
    await page.mouse.move(b.x + b.width / 2 + 160, b.y + 90, { steps: 8 });
    await page.mouse.up();
    const stored = await until(async () => {
      const p = await stack.api.get(`/api/workflows/${encodeURIComponent(wf.id)}/positions`);
      return p.positions?.first ? p.positions : null;
    }, 'stored positions');
    assert.ok(stored.second, 'every node position is stored');
    assert.equal(readFileSync(wfFile('edit.yaml'), 'utf8'), EDIT_YAML, 'positions are not written to the file');
    await screenshot(page, 'yaml-edit-canvas-light');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('a save over a file changed on disk opens the conflict view: yours, disk, base; keep mine overwrites', { timeout: TEST_TIMEOUT }, async () => {
  for (const theme of ['dark', 'light']) {
    writeFileSync(wfFile('conflict.yaml'), CONFLICT_YAML);
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await openYaml(page, 'Conflicted');
      await page.locator(tid('yaml-view-text')).click();
      await until(async () => (await editorText(page)).includes('echo only'), 'the text');
      await appendText(page, '  - id: mine\n    bash: echo mine\n');
      const theirs = CONFLICT_YAML.replace('echo only', 'echo changed-on-disk');
      writeFileSync(wfFile('conflict.yaml'), theirs);
      await page.locator(tid('save')).click();
      const dialog = page.locator(tid('yaml-conflict'));
      await dialog.waitFor();
      await textMatches(page.locator(tid('yaml-conflict-yours')), /id: mine/, 'yours');
      await textMatches(page.locator(tid('yaml-conflict-disk')), /changed-on-disk/, 'disk');
      await textMatches(page.locator(tid('yaml-conflict-base')), /echo only/, 'base');
      await screenshot(page, `yaml-edit-conflict-${theme}`);
      if (theme === 'dark') {
        await page.locator(tid('yaml-conflict-keep-mine')).click();
        await until(async () => (await dialog.count()) === 0, 'the conflict view closes');
        const disk = readFileSync(wfFile('conflict.yaml'), 'utf8');
        assert.match(disk, /id: mine/, 'mine is on disk');
        assert.doesNotMatch(disk, /changed-on-disk/, 'overwritten');
        await until(async () => (await page.locator(tid('dirty-indicator')).count()) === 0, 'saved');
      } else {
        await page.locator(tid('yaml-conflict-take-disk')).click();
        await until(async () => (await dialog.count()) === 0, 'the conflict view closes');
        await until(async () => (await editorText(page)).includes('changed-on-disk'), 'the disk text in the editor');
        assert.equal(readFileSync(wfFile('conflict.yaml'), 'utf8'), theirs, 'the file is left as it was');
        await until(async () => (await page.locator(tid('dirty-indicator')).count()) === 0, 'nothing unsaved');
      }
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});

test('+ New YAML creates a file in the folder; Convert to YAML shows the text and what is left out, then creates the file', { timeout: TEST_TIMEOUT }, async () => {
  const at = (x, y) => ({ x, y });
  const drawn = await stack.api.createWorkflow('Drawn review', {
    nodes: [
      { id: 'n1', type: 'start', position: at(0, 100), data: { initialInput: '' } },
      { id: 'n2', type: 'agent', position: at(260, 100), data: { agentName: 'Writer', userPrompt: 'Summarise: {{PREVIOUS_OUTPUT}}', tools: { subagents: true } } },
      { id: 'n3', type: 'approval', position: at(560, 100), data: { prompt: 'Ship it?' } },
    ],
    edges: [
      { id: 'e1', source: 'n1', target: 'n2', sourceHandle: 'output', targetHandle: 'input' },
      { id: 'e2', source: 'n2', target: 'n3', sourceHandle: 'output', targetHandle: 'input' },
    ],
  });
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'dark' });
  try {
    await openEditor(page, '/');
    await page.locator(tid('new-yaml')).click();
    await page.locator(tid('yaml-create-path')).fill('made-here');
    await page.locator(tid('yaml-create-submit')).click();
    await page.waitForURL(/\/workflows\/yaml\./);
    await until(async () => (await editorText(page)).includes('name: made-here'), 'the new file in the text view');
    assert.match(readFileSync(wfFile('made-here.yaml'), 'utf8'), /^name: made-here\n/, 'the file is in the folder');
    await until(async () => (await nodeIds(page)).includes('hello'), 'its step on the canvas');
    await screenshot(page, 'yaml-edit-new-dark');

    // Creating it again: the server refuses, the dialog says why.
    await page.locator(tid('new-yaml')).click();
    await page.locator(tid('yaml-create-path')).fill('made-here.yaml');
    await page.locator(tid('yaml-create-submit')).click();
    await textMatches(page.locator(tid('yaml-create-error')), /exist/i, 'the refusal');
    await page.keyboard.press('Escape');
    await until(async () => (await page.locator(tid('yaml-create')).count()) === 0, 'the dialog closes');

    await page.goto(`/workflows/${encodeURIComponent(drawn.id)}`);
    await page.locator(tid('tab-workflow')).click();
    await page.locator(tid('convert-to-yaml')).click();
    await textMatches(page.locator(tid('yaml-create-source')), /nodes:/, 'the YAML text');
    const source = await page.locator(tid('yaml-create-source')).textContent();
    const path = await page.locator(tid('yaml-create-path')).inputValue();
    assert.match(path, /\.ya?ml$/, `a suggested file name: ${path}`);
    await screenshot(page, 'yaml-edit-convert-dark');
    await page.locator(tid('yaml-create-submit')).click();
    await page.waitForURL(/\/workflows\/yaml\./);
    await until(async () => (await nodeIds(page)).length >= 2, 'the converted steps on the canvas');
    assert.equal(readFileSync(wfFile(path), 'utf8'), source, 'the file holds the text shown');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('the step inspector edits when, trigger_rule, retry and timeout as minimal file edits', { timeout: TEST_TIMEOUT }, async () => {
  writeFileSync(wfFile('edit.yaml'), EDIT_YAML);
  for (const theme of ['light', 'dark']) {
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await openYaml(page, 'Edit me');
      await until(async () => (await nodeIds(page)).length === 2, 'two steps');
      await clickNode(page, 'second');
      await page.locator(tid('inspector-yaml-settings')).waitFor();
      const settings = { when: "$first.output == 'first-out'", 'retry.max_attempts': '2', timeout: '5000', trigger_rule: 'all_done' };
      for (const [field, value] of Object.entries(settings)) {
        const input = page.locator(tid(`inspector-yaml-${field}`));
        if (field === 'trigger_rule') await input.selectOption(value);
        else await input.fill(value);
      }
      await screenshot(page, `yaml-edit-settings-${theme}`);
      const text = await applySettings(page, settings,
        (t) => /timeout: 5000/.test(t) && /max_attempts: 2/.test(t) && /when:/.test(t) && /trigger_rule: all_done/.test(t),
        'the settings in the file');
      assert.ok(text.startsWith(EDIT_YAML.split('  - id: second')[0]), 'the lines before the step are untouched, comment included');
      // The step stays selected; its inspector shows what the file now says.
      await until(async () => {
        for (const [field, value] of Object.entries(settings)) {
          if ((await page.locator(tid(`inspector-yaml-${field}`)).inputValue()) !== value) return false;
        }
        return true;
      }, 'the settings read back');
      // Emptying a field removes it.
      await applySettings(page, { timeout: '', when: '', 'retry.max_attempts': '', trigger_rule: '' },
        (t) => !/timeout|when:|max_attempts|retry|trigger_rule/.test(t), 'the settings removed');
      assert.equal(readFileSync(wfFile('edit.yaml'), 'utf8'), EDIT_YAML, 'set then cleared gives back the file byte for byte');
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
    writeFileSync(wfFile('edit.yaml'), EDIT_YAML);
  }
});
