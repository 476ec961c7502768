// The prompt fields are a code editor (CodeMirror): variables are
// highlighted and completed, the text reaches the saved graph, and typing
// is one undo step.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import { assertNoPageErrors, openEditor, selectNode, settle, TEST_TIMEOUT, textMatches, tid, until } from './lib/ui.mjs';

let stack;
let browser;

useStack({ name: 'prompt-editor', latency: '0s' }, (s, b) => {
  stack = s;
  browser = b;
});

function graph() {
  const n = (id, type, x, y, data) => ({ id, type, position: { x, y }, data });
  const e = (id, source, sourceHandle, target) => ({ id, source, target, sourceHandle, targetHandle: 'input' });
  return {
    nodes: [
      n('n1', 'start', 0, 0, { initialInput: 'topic' }),
      n('writer', 'agent', 300, 0, { agentName: 'Writer', userPrompt: 'Write about {{PREVIOUS_OUTPUT}}' }),
      n('ok', 'approval', 600, 0, { prompt: 'Good?' }),
      n('rev', 'agent', 900, 0, { agentName: 'Reviser', userPrompt: '' }),
    ],
    edges: [e('e1', 'n1', 'output', 'writer'), e('e2', 'writer', 'output', 'ok'), e('e3', 'ok', 'reject', 'rev')],
  };
}

const completion = (page) => page.locator('.cm-tooltip-autocomplete');
/** The offered labels, in order. */
const options = async (page) => (await completion(page).locator('li .cm-completionLabel').allTextContents()).map((t) => t.trim());

/** Waits for the completion list to offer `label` and picks it (click or Enter). */
async function pick(page, label, how) {
  await until(async () => (await options(page)).includes(label), `completion ${label} offered`);
  if (how === 'click') {
    await completion(page).locator('li', { hasText: label }).first().click();
  } else {
    // CodeMirror ignores keys for interactionDelay (75 ms) after the list
    // (re)opens, so fast typing is not taken as a pick: let that pass.
    const t = await page.evaluate(() => performance.now());
    await page.waitForFunction((t0) => performance.now() - t0 > 120, t);
    // Enter takes the selected option: move to ours first.
    for (let i = 0; i < 20; i++) {
      const sel = ((await completion(page).locator('li[aria-selected] .cm-completionLabel').textContent()) ?? '').trim();
      if (sel === label) break;
      await page.keyboard.press('ArrowDown');
    }
    await page.keyboard.press('Enter');
  }
  await completion(page).waitFor({ state: 'detached' });
}

async function savedPrompt(wfId, nodeId, field = 'userPrompt') {
  const wf = await stack.api.get(`/api/workflows/${wfId}`);
  return wf.graph.nodes.find((n) => n.id === nodeId).data[field];
}

for (const theme of ['light', 'dark']) {
  test(`${theme}: $ and {{ complete variables and node outputs; the picked text is saved`, { timeout: TEST_TIMEOUT }, async () => {
    const wf = await stack.api.createWorkflow(`Prompts ${theme}`, graph());
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await openEditor(page, `/workflows/${wf.id}`);
      await settle(page);
      await selectNode(page, 'rev');
      const field = page.locator(tid('inspector-userPrompt'));
      // Labelled like the textarea was.
      assert.equal(await page.getByRole('textbox', { name: 'User prompt' }).getAttribute('data-testid'), 'inspector-userPrompt');
      await field.click();

      await page.keyboard.type('Fix $');
      await until(async () => (await options(page)).length > 0, 'the completion list');
      const offered = await options(page);
      for (const want of ['$ARGUMENTS', '$REJECTION_REASON', '$WORKFLOW_ID', '$n1.output', '$writer.output', '$ok.output']) {
        assert.ok(offered.includes(want), `${want} offered in ${JSON.stringify(offered)}`);
      }
      assert.ok(!offered.includes('$rev.output'), 'a node is not offered its own output');
      await page.keyboard.type('wr');
      await until(async () => !(await options(page)).includes('$n1.output'), 'the list filtered on what is typed');
      assert.equal((await options(page))[0], '$writer.output', 'the best match first');
      await pick(page, '$writer.output', 'enter');

      await page.keyboard.type(' given {{');
      await pick(page, '{{PREVIOUS_OUTPUT}}', 'click');
      await page.keyboard.type(' because $REJ');
      await pick(page, '$REJECTION_REASON', 'enter');

      const want = 'Fix $writer.output given {{PREVIOUS_OUTPUT}} because $REJECTION_REASON';
      assert.equal(await field.textContent(), want);
      // Highlighted as variables.
      assert.deepEqual(await field.locator('.cm-var--ref').allTextContents(), ['$writer.output']);
      assert.deepEqual(await field.locator('.cm-var--previous').allTextContents(), ['{{PREVIOUS_OUTPUT}}']);
      assert.deepEqual(await field.locator('.cm-var--named').allTextContents(), ['$REJECTION_REASON']);
      await page.keyboard.type(' $');
      await completion(page).waitFor();
      await screenshot(page, `prompt-editor-${theme}`);
      await page.keyboard.press('Escape');
      await page.keyboard.press('Backspace');
      await page.keyboard.press('Backspace');

      // Reaches the store without leaving the field: the dirty flag.
      await page.locator(tid('dirty-indicator')).waitFor();
      await page.locator(tid('save')).click();
      await page.locator(tid('dirty-indicator')).waitFor({ state: 'detached' });
      assert.equal(await savedPrompt(wf.id, 'rev'), want);
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  });
}

test('fill() works on the editor, Ctrl+S saves from inside it, unknown references are marked, a burst of typing is one undo step', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Prompts fill', graph());
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await openEditor(page, `/workflows/${wf.id}`);
    await settle(page);
    await selectNode(page, 'writer');
    const user = page.locator(tid('inspector-userPrompt'));
    await textMatches(user, /^Write about \{\{PREVIOUS_OUTPUT\}\}$/, 'the stored prompt in the editor');
    await user.fill('Summarise $nope.output and $n1.output');
    assert.deepEqual(await user.locator('.cm-var--unknown').allTextContents(), ['$nope.output']);
    assert.deepEqual(await user.locator('.cm-var--ref').allTextContents(), ['$n1.output']);
    await page.keyboard.press('Control+s');
    await until(async () => (await savedPrompt(wf.id, 'writer')) === 'Summarise $nope.output and $n1.output', 'Ctrl+S saved the text');

    // Approval and system prompts are editors too.
    await selectNode(page, 'ok');
    await page.locator(tid('inspector-approval-prompt')).fill('Ship it?');
    await selectNode(page, 'writer');
    const sys = page.locator(tid('inspector-systemPrompt'));
    await sys.click();
    // Typed key by key: one undo step for the whole burst.
    await page.keyboard.type('You are a careful writer.', { delay: 15 });
    await page.locator(tid('undo')).click(); // leaving the field writes the text first
    await textMatches(sys, /^$/, 'the system prompt after one undo');
    await page.locator(tid('redo')).click();
    await textMatches(sys, /^You are a careful writer\.$/, 'the system prompt after redo');
    await page.locator(tid('save')).click();
    await page.locator(tid('dirty-indicator')).waitFor({ state: 'detached' });
    assert.equal(await savedPrompt(wf.id, 'writer', 'systemPrompt'), 'You are a careful writer.');
    assert.equal(await savedPrompt(wf.id, 'ok', 'prompt'), 'Ship it?');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});
