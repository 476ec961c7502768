// One save model for a YAML workflow, with a way back: every canvas
// gesture, inspector field and pause in typing writes the file, and every
// write is one undo step (Ctrl+Z, the toolbar, the toast of a destructive
// one); text with errors is not written and cannot run; a file changed on
// disk is noticed while open, and merged per change.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import { assertNoPageErrors, nodeIds, openEditor, settle, TEST_TIMEOUT, textMatches, tid, until } from './lib/ui.mjs';

// A root step three others wait for, the example.
const ROOT_YAML = `name: Root and three
description: Deleting the root is one undo away.
nodes:
  # fetch comes first
  - id: fetch
    bash: echo fetched
  - id: build
    depends_on: [fetch]
    bash: echo build
  - id: test
    depends_on: [fetch]
    bash: echo test
  - id: lint
    depends_on: [fetch]
    bash: echo lint
`;

const DISK_YAML = `name: Shared file
description: Someone else edits it too.
nodes:
  - id: one
    bash: echo one
  - id: two
    depends_on: [one]
    bash: echo two
`;

let stack;
let browser;

useStack({ name: 'yaml-undo', latency: '100ms', workflows: { 'root.yaml': ROOT_YAML, 'shared.yaml': DISK_YAML } }, (s, b) => {
  stack = s;
  browser = b;
});

const wfFile = (name) => join(stack.dataDir, 'workflows', name);
const disk = (name) => readFileSync(wfFile(name), 'utf8');

async function editorText(page) {
  return page.$$eval('[data-testid="yaml-text"] .cm-line', (els) => els.map((e) => e.textContent).join('\n'));
}

async function openYaml(page, name, size) {
  const list = await stack.api.get('/api/workflows');
  const wf = list.find((w) => w.kind === 'yaml' && w.name === name);
  assert.ok(wf, `the server lists ${name}`);
  if (size) await page.setViewportSize(size);
  await openEditor(page, `/workflows/${encodeURIComponent(wf.id)}`);
  await page.locator(tid('yaml-view-canvas')).waitFor();
  await until(async () => (await nodeIds(page)).length > 0, 'the steps on the canvas');
  return wf;
}

async function toastText(page) {
  return (await page.locator(tid('toasts')).textContent()) ?? '';
}

const SIZES = [
  ['1440', { width: 1440, height: 900 }],
  ['1100', { width: 1100, height: 800 }],
];

test('deleting a root step says what it did and is undone from the toast, Ctrl+Z and the toolbar, byte for byte', { timeout: TEST_TIMEOUT }, async () => {
  for (const theme of ['light', 'dark']) {
    for (const [w, size] of SIZES) {
      writeFileSync(wfFile('root.yaml'), ROOT_YAML);
      const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
      try {
        await openYaml(page, 'Root and three', size);
        await settle(page);
        await page.locator(`${tid('node-fetch')} .sy-node__head`).click();
        await page.keyboard.press('Delete');
        await until(() => !disk('root.yaml').includes('id: fetch'), 'fetch deleted from the file');
        assert.doesNotMatch(disk('root.yaml'), /depends_on/, 'the three lost their dependency');
        await textMatches(page.locator(tid('toasts')), /Deleted step fetch; build, test and lint no longer wait for it\./, 'the toast says what it did');
        await page.locator(tid('toast-action')).waitFor();
        await screenshot(page, `yaml-undo-toast-${theme}-${w}`);
        if (w === '1440') {
          // The toast's Undo writes the text back.
          await page.locator(tid('toast-action')).click();
          await until(() => disk('root.yaml') === ROOT_YAML, 'the file back byte for byte (toast Undo)');
          await until(async () => (await nodeIds(page)).includes('fetch'), 'fetch back on the canvas');
          // Redo and undo again from the keyboard.
          await page.locator(tid('canvas')).click({ position: { x: 5, y: 5 } });
          await page.keyboard.press('Control+Shift+z');
          await until(() => !disk('root.yaml').includes('id: fetch'), 'redo deletes it again');
          await page.keyboard.press('Control+z');
          await until(() => disk('root.yaml') === ROOT_YAML, 'Ctrl+Z gives the file back');
        } else {
          // The toolbar's undo button names what it undoes.
          const label = await page.locator(tid('undo')).getAttribute('aria-label');
          assert.equal(label, 'Undo: Delete step fetch');
          await page.locator(tid('undo')).click();
          await until(() => disk('root.yaml') === ROOT_YAML, 'the file back byte for byte (toolbar)');
          await until(async () => await page.locator(tid('redo')).isEnabled(), 'redo is offered');
        }
        assertNoPageErrors(errors);
      } finally {
        await context.close();
      }
    }
  }
});

test('one save model: an inspector field is written when left, typed text when it has no errors; each write is one undo step', { timeout: TEST_TIMEOUT }, async () => {
  writeFileSync(wfFile('root.yaml'), ROOT_YAML);
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme: 'light' });
  try {
    await openYaml(page, 'Root and three');
    await textMatches(page.locator(tid('save')), /Saved/, 'the save button says all is saved');
    // Inspector: written when the field is left, no Apply button.
    await page.locator(`${tid('node-build')} .sy-node__head`).click();
    await page.locator(tid('inspector-yaml-main')).fill('echo built');
    await textMatches(page.locator(tid('inspector')), /Not in the file yet/, 'the field says it is not written yet');
    await page.locator(tid('inspector-yaml-timeout')).click();
    await until(() => disk('root.yaml').includes('bash: echo built'), 'the field written when left');
    await page.locator(tid('inspector-yaml-timeout')).fill('9000');
    await page.keyboard.press('Enter');
    await until(() => disk('root.yaml').includes('timeout: 9000'), 'Enter writes a setting');
    await page.locator(tid('inspector-yaml-trigger_rule')).selectOption('one_success');
    await until(() => disk('root.yaml').includes('trigger_rule: one_success'), 'a choice is written at once');
    await screenshot(page, 'yaml-undo-inspector-light');
    // Three writes, three undo steps.
    await page.locator(tid('canvas')).click({ position: { x: 5, y: 5 } });
    for (let i = 0; i < 3; i++) await page.locator(tid('undo')).click();
    await until(() => disk('root.yaml') === ROOT_YAML, 'three undos give the file back');

    // Text: an error is not written, and Run says why it is off.
    await page.locator(tid('yaml-view-split')).click();
    await page.locator(tid('yaml-text')).click();
    await page.keyboard.press('Control+End');
    await page.keyboard.insertText('  - id: extra\n    depends_on: [nope]\n    bash: echo extra\n');
    await textMatches(page.locator(tid('run-blocker')), /Fix 1 error to run/, 'Run blocked by the typed error');
    assert.equal(await page.locator(tid('run')).isDisabled(), true, 'Save & Run is off while the text has errors');
    await textMatches(page.locator(tid('save-state')), /Not saved: 1 error/, 'the save state says why');
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(disk('root.yaml'), ROOT_YAML, 'text with an error is not written');
    await screenshot(page, 'yaml-undo-text-error-light');
    // Fixed: written once typing pauses; Run is on again.
    await page.keyboard.press('Control+z');
    await page.keyboard.insertText('  - id: extra\n    depends_on: [lint]\n    bash: echo extra\n');
    await until(() => disk('root.yaml').includes('depends_on: [lint]'), 'the fixed text written by itself');
    await until(async () => (await page.locator(tid('dirty-indicator')).count()) === 0, 'nothing unsaved');
    await until(async () => await page.locator(tid('run')).isEnabled(), 'Run is on again');
    assert.match(disk('root.yaml'), /# fetch comes first/, 'the comment is kept');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('a file changed on disk is noticed while open: reload it, or merge per change with highlighted diffs', { timeout: TEST_TIMEOUT }, async () => {
  for (const theme of ['light', 'dark']) {
    for (const [w, size] of SIZES) {
      writeFileSync(wfFile('shared.yaml'), DISK_YAML);
      const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
      try {
        await openYaml(page, 'Shared file', size);
        // Clean editor, file changed: a banner offers to reload.
        writeFileSync(wfFile('shared.yaml'), DISK_YAML.replace('echo one', 'echo one-from-disk'));
        await textMatches(page.locator(tid('yaml-disk-change')), /shared\.yaml changed on disk/, 'the editor noticed', 20_000);
        await page.locator(tid('yaml-disk-reload')).click();
        await page.locator(tid('yaml-disk-change')).waitFor({ state: 'detached' });
        await page.locator(tid('yaml-view-text')).click();
        await until(async () => (await editorText(page)).includes('one-from-disk'), 'the reloaded text');

        // Typed text (with an error, so it stays unsaved), and the disk changes other lines and the same line.
        await page.locator(tid('yaml-text')).click();
        await page.keyboard.press('Control+End');
        await page.keyboard.insertText('  - id: mine\n    depends_on: [missing]\n    bash: echo mine\n');
        const base = disk('shared.yaml');
        writeFileSync(wfFile('shared.yaml'), base.replace('Someone else edits it too.', 'Edited on disk.') + '  - id: theirs\n    bash: echo theirs\n');
        await textMatches(page.locator(tid('yaml-disk-change')), /not written yet/, 'the banner offers a merge', 20_000);
        await page.locator(tid('yaml-disk-merge')).click();
        await page.locator(tid('yaml-conflict')).waitFor();
        // Two changes: the disk's edit of the description (taken), and both adding a step at the end (pick).
        await textMatches(page.locator(tid('yaml-merge-summary')), /2 changes: 1 to pick/, 'the summary');
        assert.equal(await page.locator(`${tid('yaml-merge-hunk-0')}`).getAttribute('data-by'), 'disk');
        assert.equal(await page.locator(`${tid('yaml-merge-hunk-0')}`).getAttribute('data-choice'), 'disk');
        assert.equal(await page.locator(`${tid('yaml-merge-hunk-1')}`).getAttribute('data-by'), 'both');
        assert.ok((await page.locator(`${tid('yaml-merge-disk-0')} .diff__line--add`).count()) >= 1, 'added lines highlighted');
        assert.ok((await page.locator(`${tid('yaml-merge-disk-0')} .diff__line--del`).count()) >= 1, 'removed lines highlighted');
        assert.equal(await page.locator(tid('yaml-conflict-save-merged')).isDisabled(), true, 'a conflict must be picked first');
        await screenshot(page, `yaml-undo-merge-${theme}-${w}`);
        await page.locator(tid('yaml-merge-pick-1-both')).click();
        await page.locator(tid('yaml-conflict-save-merged')).click();
        await page.locator(tid('yaml-conflict')).waitFor({ state: 'detached' });
        const merged = await until(() => {
          const t = disk('shared.yaml');
          return t.includes('id: mine') && t.includes('id: theirs') ? t : null;
        }, 'the merge written');
        assert.match(merged, /description: Edited on disk\./, 'the disk change is kept');
        assert.match(merged, /echo one-from-disk/, 'the reloaded line is kept');
        assertNoPageErrors(errors);
      } finally {
        await context.close();
      }
    }
  }
});
