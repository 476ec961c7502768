// The step inspector of an editable YAML workflow under the one save model:
// a field is written to the file when it is left (Enter too; a choice at
// once), one minimal edit each. These are yaml-edit.test.mjs's two
// inspector tests as they read without the old "Apply" buttons.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { launchBrowser, newPage, screenshot } from './lib/browser.mjs';
import { startStack } from './lib/stack.mjs';
import { assertNoPageErrors, clickEdge, clickNode, connect, nodeIds, openEditor, TEST_TIMEOUT, tid, until } from './lib/ui.mjs';

const EDIT_YAML = `name: Edit me
description: A YAML workflow edited in the browser.
nodes:
  # the first step
  - id: first
    bash: echo first-out
  - id: second
    bash: echo second-out
`;

let stack;
let browser;

before(async () => {
  stack = await startStack({ name: 'yaml-inspector', latency: '100ms', workflows: { 'edit.yaml': EDIT_YAML } });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await stack?.stop();
});

const wfFile = () => join(stack.dataDir, 'workflows', 'edit.yaml');
const disk = () => readFileSync(wfFile(), 'utf8');

async function open(page) {
  await openEditor(page, '/workflows/yaml.edit.yaml');
  await until(async () => (await nodeIds(page)).length === 2, 'two steps');
}

test('canvas gestures and the main field edit the file: add, write the prompt when left, connect, delete edge and node', { timeout: TEST_TIMEOUT }, async () => {
  writeFileSync(wfFile(), EDIT_YAML);
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await open(page);
    await page.locator(tid('palette-yaml-prompt')).click();
    await until(async () => (await nodeIds(page)).includes('prompt_1'), 'the new prompt step');
    assert.match(disk(), /- id: prompt_1\n {4}prompt:/, 'addNode wrote the step');
    await page.locator(tid('node-prompt_1')).click();
    await page.locator(tid('inspector-yaml-main')).fill('Summarize $second.output');
    await page.keyboard.press('Tab'); // leaving the field writes it
    await until(() => /prompt: Summarize \$second\.output/.test(disk()), 'the prompt in the file');
    await connect(page, 'second', 'output', 'prompt_1');
    await until(() => /depends_on: \[second\]/.test(disk()), 'the dependency in the file');
    await clickEdge(page, 'second->prompt_1');
    await page.keyboard.press('Delete');
    await until(() => !/depends_on/.test(disk()), 'removeDependency applied');
    await page.locator(tid('node-prompt_1')).click();
    await page.keyboard.press('Delete');
    await until(async () => !(await nodeIds(page)).includes('prompt_1'), 'the step is gone from the canvas');
    await until(() => disk() === EDIT_YAML, 'add then delete gives back the file byte for byte');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('the settings (when, trigger_rule, retry, timeout) are written field by field; set then cleared gives the file back', { timeout: TEST_TIMEOUT }, async () => {
  for (const theme of ['light', 'dark']) {
    writeFileSync(wfFile(), EDIT_YAML);
    const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
    try {
      await open(page);
      await clickNode(page, 'second');
      await page.locator(tid('inspector-yaml-settings')).waitFor();
      await page.locator(tid('inspector-yaml-when')).fill("$first.output == 'first-out'");
      await page.locator(tid('inspector-yaml-retry.max_attempts')).fill('2');
      await page.locator(tid('inspector-yaml-timeout')).fill('5000');
      await page.keyboard.press('Enter'); // (selectOption below does not move the focus)
      await page.locator(tid('inspector-yaml-trigger_rule')).selectOption('all_done');
      const text = await until(() => {
        const t = disk();
        return /timeout: 5000/.test(t) && /max_attempts: 2/.test(t) && /when:/.test(t) && /trigger_rule: all_done/.test(t) ? t : null;
      }, 'the settings in the file');
      assert.ok(text.startsWith(EDIT_YAML.split('  - id: second')[0]), 'the lines before the step are untouched, comment included');
      await screenshot(page, `yaml-inspector-settings-${theme}`);
      await until(async () => (await page.locator(tid('inspector-yaml-timeout')).inputValue()) === '5000', 'the timeout read back');
      await page.locator(tid('inspector-yaml-timeout')).fill('');
      await page.locator(tid('inspector-yaml-when')).fill('');
      await page.locator(tid('inspector-yaml-retry.max_attempts')).fill('');
      await page.keyboard.press('Enter');
      await page.locator(tid('inspector-yaml-trigger_rule')).selectOption('');
      await until(() => !/timeout|when:|max_attempts|retry|trigger_rule/.test(disk()), 'the settings removed');
      assert.equal(disk(), EDIT_YAML, 'set then cleared gives back the file byte for byte');
      assertNoPageErrors(errors);
    } finally {
      await context.close();
    }
  }
});
