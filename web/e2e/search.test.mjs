// Finding things: the workflow list searches names, folders, descriptions
// and #tags, groups YAML files by folder, shows whole names and is one Tab
// stop; Ctrl+F on the canvas finds nodes, highlights them and jumps to each.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newPage, screenshot } from './lib/browser.mjs';
import { useStack } from './lib/use.mjs';
import { assertNoPageErrors, openEditor, settle, TEST_TIMEOUT, textMatches, tid, until } from './lib/ui.mjs';

const TAGGED = `name: Nightly release train
description: Builds and publishes every night.
tags: [ops, nightly]
nodes:
  - id: build
    bash: echo build
`;
const PLAIN = `name: Triage incoming issues
description: Labels new issues.
nodes:
  - id: label
    bash: echo label
`;

let stack;
let browser;
const LONG = 'Summarise the weekly customer feedback into a report';

function chain(n, names) {
  const ids = Array.from({ length: n }, (_, i) => `n${i + 1}`);
  return {
    nodes: ids.map((id, i) => ({
      id,
      type: i === 0 ? 'start' : 'agent',
      position: { x: i * 300, y: 0 },
      data: i === 0 ? {} : { agentName: names[i - 1], userPrompt: `Step ${i}: {{PREVIOUS_OUTPUT}}` },
    })),
    edges: ids.slice(1).map((id, i) => ({ id: `e${i + 1}`, source: ids[i], target: id, sourceHandle: 'output', targetHandle: 'input' })),
  };
}

useStack({ name: 'search', workflows: { 'release.yaml': TAGGED, 'team/triage.yaml': PLAIN } }, async (s, b) => {
  stack = s;
  browser = b;
  await stack.api.createWorkflow(LONG, chain(2, ['Summariser']));
  for (let i = 1; i <= 38; i++) await stack.api.createWorkflow(`Filler workflow ${String(i).padStart(2, '0')}`, chain(2, ['A']));
});

async function listedIds(page) {
  return page.$$eval('[data-testid="workflow-list"] a.wf-item', (els) => els.map((e) => e.getAttribute('data-testid').replace(/^workflow-item-/, '')));
}

test('the workflow list: search by name, folder and #tag; folders; whole names; one Tab stop before the canvas', { timeout: TEST_TIMEOUT }, async () => {
  for (const theme of ['light', 'dark']) {
    for (const [w, size] of [['1440', { width: 1440, height: 900 }], ['1100', { width: 1100, height: 800 }]]) {
      const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
      try {
        await page.setViewportSize(size);
        await openEditor(page, '/');
        if (w === '1100') await page.locator(tid('toggle-left-panel')).click();
        await page.locator(tid('workflow-search')).waitFor();
        await until(async () => (await listedIds(page)).length === 41, '41 workflows listed');
        // Folders: drawn ones, the YAML files at the top, then team/.
        const groups = await page.$$eval('.wf-group__head', (els) => els.map((e) => e.textContent.replace(/\s+/g, ' ').trim()));
        assert.deepEqual(groups, ['▾ Drawn (39)', '▾ YAML files (1)', '▾ team/ (1)']);
        // A long name is shown whole (wrapped, not cut at the panel's edge).
        const long = page.locator('.wf-item__name', { hasText: LONG });
        assert.equal(await long.textContent(), LONG);
        assert.ok(await long.evaluate((e) => e.scrollHeight <= e.clientHeight + 1 && e.scrollWidth <= e.clientWidth + 1), 'the name is not clipped');

        await page.locator(tid('workflow-search')).fill('triage');
        await until(async () => (await listedIds(page)).join() === 'yaml.team__triage.yaml', 'a search by name');
        await page.locator(tid('workflow-search')).fill('team/');
        await until(async () => (await listedIds(page)).join() === 'yaml.team__triage.yaml', 'a search by folder');
        await page.locator(tid('workflow-search')).fill('#ops');
        await until(async () => (await listedIds(page)).join() === 'yaml.release.yaml', 'a search by tag');
        await textMatches(page.locator(tid('workflow-item-yaml.release.yaml')), /#ops/, 'the tags on the item');
        await screenshot(page, `search-list-${theme}-${w}`);
        await page.locator(tid('workflow-search')).fill('no such thing');
        await page.locator(tid('workflow-search-empty')).waitFor();
        await page.locator(tid('workflow-search')).fill('');

        // Tab from the run input's neighbour: the canvas comes before the 41 list links.
        await page.locator(tid('run')).focus().catch(() => {});
        await page.locator(tid('run-input')).focus();
        let presses = 0;
        for (; presses < 15; presses++) {
          await page.keyboard.press('Tab');
          if (await page.evaluate(() => !!document.activeElement?.closest('.react-flow'))) break;
        }
        assert.ok(presses < 15, `the canvas is reached within ${presses + 1} Tab presses`);
        // The list is one Tab stop; arrows move inside it.
        const stops = await page.$$eval('[data-testid="workflow-list"] a.wf-item', (els) => els.filter((e) => e.tabIndex === 0).length);
        assert.equal(stops, 1, 'one list link in the Tab order');
        await page.locator(tid('workflow-search')).focus();
        await page.keyboard.press('ArrowDown');
        await page.keyboard.press('ArrowDown');
        const focused = await page.evaluate(() => document.activeElement?.getAttribute('data-testid'));
        assert.match(focused ?? '', /^workflow-item-/, 'arrow keys move through the list');
        assertNoPageErrors(errors);
      } finally {
        await context.close();
      }
    }
  }
});

test('Ctrl+F on the canvas finds nodes by name and text, highlights them and jumps to each', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Seven agents', chain(8, ['Planner', 'Researcher', 'Writer', 'Editor', 'Fact checker', 'Designer', 'Publisher']));
  for (const theme of ['light', 'dark']) {
    for (const [w, size] of [['1440', { width: 1440, height: 900 }], ['1100', { width: 1100, height: 800 }]]) {
      const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, token: stack.token, theme });
      try {
        await page.setViewportSize(size);
        await openEditor(page, `/workflows/${wf.id}`);
        await settle(page);
        await page.locator(tid('canvas')).click({ position: { x: 10, y: 10 } });
        await page.keyboard.press('Control+f');
        await page.locator(tid('canvas-search-input')).waitFor();
        await page.keyboard.type('writer');
        await textMatches(page.locator(tid('canvas-search-count')), /^1 of 1$/, 'one match');
        await until(async () => (await page.locator(tid('node-n4')).getAttribute('data-search')) === 'current', 'the match highlighted');
        await until(async () => ((await page.locator(`${tid('inspector')} .inspector__id code`).textContent().catch(() => '')) ?? '') === 'n4', 'and selected');
        // Prompt text matches too; Enter goes to the next one.
        await page.locator(tid('canvas-search-input')).fill('step');
        await textMatches(page.locator(tid('canvas-search-count')), /^1 of 7$/, 'seven by prompt text');
        await page.keyboard.press('Enter');
        await page.keyboard.press('Enter');
        await textMatches(page.locator(tid('canvas-search-count')), /^3 of 7$/, 'Enter moves on');
        assert.equal(await page.locator('[data-search="current"]').count(), 1);
        assert.equal(await page.locator('[data-search="match"]').count(), 6);
        await settle(page);
        await screenshot(page, `search-canvas-${theme}-${w}`);
        await page.keyboard.press('Escape');
        await page.locator(tid('canvas-search')).waitFor({ state: 'detached' });
        assert.equal(await page.locator('[data-search]').count(), 0, 'the highlight goes with the search');
        assertNoPageErrors(errors);
      } finally {
        await context.close();
      }
    }
  }
});
