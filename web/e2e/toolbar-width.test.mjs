// The editor's toolbar is one row at 1440, 1100 and 900 px (it wrapped to a
// second row at 1100, pushing the canvas down), for a drawn graph and a
// YAML workflow: its parts share one line, none sticks out of it or covers
// another, and every control there at 1440 can still be reached at 900
// (in the toolbar, or in the More menu it opens) under the same
// accessible name. Also: the More menu from the keyboard, the run blocker
// as an icon, and every width from 1600 down to 860 px in the states that
// change what the toolbar says (unsaved, blocked).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { contextPool, launchBrowser, screenshot } from './lib/browser.mjs';
import { startStack } from './lib/stack.mjs';
import { assertNoPageErrors, openEditor, TEST_TIMEOUT, textMatches, tid, until } from './lib/ui.mjs';

const FLOW_YAML = `name: Customer onboarding with a rather long name for the toolbar
description: Two steps.
nodes:
  - id: fetch
    bash: echo fetched
  - id: report
    depends_on: [fetch]
    bash: echo reported
`;
// A deep path: the toolbar shows it, truncated.
const YAML_PATH = 'team/customer-success/onboarding-pipeline.yaml';

const WIDTHS = [1440, 1100, 900];
const HEIGHT = 800;

let stack;
let browser;
let pool;

before(async () => {
  stack = await startStack({ name: 'toolbar-width', latency: '50ms', workflows: { [YAML_PATH]: FLOW_YAML } });
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

const TOOLBAR = '[role="toolbar"][aria-label="Workflow actions"]';
const MORE = tid('toolbar-more');
const MENU = tid('toolbar-more-menu');

/** The id of the YAML workflow (the server names it from its path). */
async function yamlId() {
  const wf = (await stack.api.get('/api/workflows')).find((w) => w.kind === 'yaml');
  assert.ok(wf, 'the YAML workflow is listed');
  return wf.id;
}

/** Opens the editor and waits until the workflow is checked (Run is on: no passing "Checking…" blocker). */
async function openChecked(page, path) {
  await openEditor(page, path);
  await until(async () => await page.locator(tid('run')).isEnabled(), 'Run enabled');
}

/** Resizes the window and waits until the page has the new width. */
async function resize(page, width) {
  await page.setViewportSize({ width, height: HEIGHT });
  await until(async () => (await page.evaluate(() => window.innerWidth)) === width, `the window to be ${width} px wide`);
}

/**
 * The toolbar's geometry: its box, the vertical centres of its direct parts
 * (boxes with a height: an empty status slot has none), the Run button's
 * height, and every control or label in it that is shown (a checkbox counts
 * as its label), with its box.
 */
async function layout(page) {
  return page.evaluate((sel) => {
    const tb = document.querySelector(sel);
    const r = (el) => {
      const b = el.getBoundingClientRect();
      return { left: b.left, right: b.right, top: b.top, bottom: b.bottom, width: b.width, height: b.height };
    };
    const name = (el) => el.dataset.testid || el.getAttribute('aria-label') || el.textContent.trim() || el.className;
    const parts = [...tb.children].map((c) => ({ name: name(c), ...r(c) })).filter((p) => p.height > 0 && p.width > 0);
    const shown = (el) => el.checkVisibility({ visibilityProperty: true }) && el.getBoundingClientRect().width > 0;
    const controls = [...tb.querySelectorAll('button, input:not([type="file"]), label.check, .kind, .run-blocker, .toolbar__status')]
      .filter((el) => shown(el) && !el.closest('[popover]:popover-open'))
      .filter((el) => !(el.matches('input[type="checkbox"]') && el.closest('label.check')))
      .filter((el) => !(el.matches('button') && el.parentElement.closest('.run-blocker')))
      .map((el) => ({ name: name(el), ...r(el) }));
    // A shown control that shows nothing (its text hidden, no icon in its place).
    const pseudo = (el, which) => {
      const cs = getComputedStyle(el, which);
      return cs.display !== 'none' && cs.content !== 'none' && cs.content !== 'normal';
    };
    const showsText = (el) => {
      const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let t = walk.nextNode(); t; t = walk.nextNode()) {
        const b = t.parentElement.getBoundingClientRect();
        if (t.textContent.trim() && b.width > 2 && b.height > 2) return true;
      }
      return false;
    };
    const blank = [...tb.querySelectorAll('button, label.check')]
      .filter((el) => shown(el) && !el.closest('[popover]:popover-open'))
      .filter((el) => !showsText(el) && !pseudo(el, '::before') && !pseudo(el, '::after'))
      .map(name);
    return {
      box: r(tb),
      blank,
      scrolls: tb.scrollWidth > tb.clientWidth + 1,
      parts,
      runHeight: tb.querySelector('[data-testid="run"]').getBoundingClientRect().height,
      controls,
      viewport: window.innerWidth,
    };
  }, TOOLBAR);
}

/**
 * Fails unless the toolbar is one row, nothing in it sticks out of it, no
 * two of its parts overlap, and none of its controls is an empty box.
 */
function assertOneRow(l, what) {
  const centres = l.parts.map((p) => (p.top + p.bottom) / 2);
  const spread = Math.max(...centres) - Math.min(...centres);
  assert.ok(
    spread <= 2,
    `${what}: the toolbar's parts share one row (centres within ${spread.toFixed(1)} px): ${JSON.stringify(l.parts.map((p) => [p.name, Math.round(p.top)]))}`,
  );
  assert.ok(l.box.height < 1.5 * l.runHeight, `${what}: the toolbar is one button high (${l.box.height} px, Run ${l.runHeight} px)`);
  assert.ok(!l.scrolls, `${what}: the toolbar does not scroll sideways`);
  const out = l.controls.filter((c) => c.left < l.box.left - 0.5 || c.right > l.box.right + 0.5 || c.right > l.viewport + 0.5);
  assert.deepEqual(
    out.map((c) => `${c.name} ${Math.round(c.left)}..${Math.round(c.right)}`),
    [],
    `${what}: no control sticks out of the toolbar (${Math.round(l.box.left)}..${Math.round(l.box.right)})`,
  );
  const overlaps = [];
  for (let i = 0; i < l.controls.length; i++) {
    for (let j = i + 1; j < l.controls.length; j++) {
      const a = l.controls[i];
      const b = l.controls[j];
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 0.5 && h > 0.5) overlaps.push(`${a.name} / ${b.name}`);
    }
  }
  assert.deepEqual(overlaps, [], `${what}: no two toolbar controls overlap`);
  assert.deepEqual(l.blank, [], `${what}: every shown control shows its text or an icon`);
}

/**
 * The toolbar's controls (buttons, fields, the checkbox) that are shown, by
 * a key (data-testid, else aria-label, else text): the list reachability is
 * checked against.
 */
async function shownControls(page) {
  return page.evaluate((sel) => {
    const tb = document.querySelector(sel);
    return [...tb.querySelectorAll('button, input:not([type="file"])')]
      .filter((el) => el.checkVisibility({ visibilityProperty: true }) && el.getBoundingClientRect().width > 0)
      .map((el) => el.dataset.testid || el.getAttribute('aria-label') || el.textContent.trim());
  }, TOOLBAR);
}

/** The locator of a control by its key (see shownControls). */
function control(page, key) {
  return page.locator(TOOLBAR).locator(`[data-testid="${key}"], [aria-label="${key}"], button:text-is("${key}")`).first();
}

/** Its role and accessible name, as assistive tech gets them (without a field's value). */
async function a11y(loc) {
  return (await loc.ariaSnapshot()).split('\n')[0].replace(/:\s.*$/, '').replace(/:$/, '');
}

/**
 * Whether the locator is shown, inside the window, and on top where it is
 * (a click at its centre lands on it; disabled ones count: Undo with
 * nothing to undo is still there).
 */
async function reachable(page, loc) {
  if (!(await loc.isVisible())) return false;
  return loc.evaluate((el) => {
    const b = el.getBoundingClientRect();
    if (b.width < 1 || b.height < 1 || b.left < -0.5 || b.top < -0.5 || b.right > window.innerWidth + 0.5 || b.bottom > window.innerHeight + 0.5) return false;
    const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
    return !!hit && (el === hit || el.contains(hit) || (hit.tagName === 'LABEL' && hit.contains(el)));
  });
}

/**
 * Opens the editor at `path` at each width: one row each time; at 900 every
 * control of 1440 is reachable, in the toolbar or in the opened More menu,
 * under the same role and name.
 */
async function checkWidths(path, label) {
  const { page, errors, context } = await pool.open('light', { width: 1440, height: HEIGHT });
  try {
    await openChecked(page, path);
    let wide;
    const names = new Map();
    for (const w of WIDTHS) {
      await resize(page, w);
      if (w === 1440) {
        // A fresh load at each width too: the first layout, not only a resize.
        await page.reload();
        await openChecked(page, path);
      }
      const l = await layout(page);
      assertOneRow(l, `${label} at ${w} px`);
      await screenshot(page, `toolbar-${label}-${w}`);
      if (w === 1440) {
        wide = await shownControls(page);
        assert.ok(!wide.includes('toolbar-more'), `${label} at 1440: no More button (everything fits)`);
        for (const key of wide) names.set(key, await a11y(control(page, key)));
        // The names the other tests (and screen readers) know these by.
        assert.equal(names.get('auto-layout'), '- button "Auto-layout"');
        assert.equal(names.get('fit-view'), '- button "Fit"');
        assert.equal(names.get('snap-toggle'), '- checkbox "Snap" [checked]');
        if (label === 'graph') {
          assert.equal(names.get('import'), '- button "Import"');
          assert.equal(names.get('export'), '- button "Export"');
        }
        continue;
      }
      // Every control of 1440: in the toolbar, or in the More menu.
      const hidden = [];
      for (const key of wide) {
        const loc = control(page, key);
        if (await reachable(page, loc)) {
          assert.equal(await a11y(loc), names.get(key), `${label} at ${w} px: ${key} keeps its role and name`);
        } else {
          hidden.push(key);
        }
      }
      if (w === 1100) {
        assert.deepEqual(hidden, [], `${label} at 1100 px: every control is in the toolbar itself`);
        assert.equal(await page.locator(MORE).isVisible(), false, `${label} at 1100 px: no More button`);
        continue;
      }
      assert.ok(hidden.length > 0, `${label} at 900 px: some controls moved to the More menu`);
      await page.locator(MORE).click();
      await page.locator(MENU).waitFor({ state: 'visible' });
      for (const key of hidden) {
        const loc = control(page, key);
        assert.ok(await page.locator(MENU).locator(`[data-testid="${key}"]`).count(), `${label} at 900 px: ${key} is in the More menu`);
        assert.ok(await reachable(page, loc), `${label} at 900 px: ${key} is reachable in the opened More menu`);
        assert.equal(await a11y(loc), names.get(key), `${label} at 900 px: ${key} keeps its role and name in the menu`);
      }
      // The menu lies wholly inside the window, below the toolbar.
      const menu = await page.locator(MENU).boundingBox();
      const tb = await page.locator(TOOLBAR).boundingBox();
      assert.ok(menu.x >= 0 && menu.x + menu.width <= w + 0.5, `${label}: the More menu is inside the window (${menu.x}..${menu.x + menu.width})`);
      assert.ok(menu.y >= tb.y + tb.height - 8, `${label}: the More menu opens below the toolbar (${menu.y} vs ${tb.y + tb.height})`);
      await screenshot(page, `toolbar-${label}-${w}-menu`);
      await page.keyboard.press('Escape');
      await page.locator(MENU).waitFor({ state: 'hidden' });
    }
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
}

test('a drawn graph: the toolbar is one row at 1440, 1100 and 900 px and every control stays reachable under its name', { timeout: TEST_TIMEOUT }, async () => {
  const wf = await stack.api.createWorkflow('Quarterly report writer with a name longer than the toolbar has room for', {
    nodes: [n('n1', 'start', 0, 0), n('n2', 'agent', 300, 0, { agentName: 'Writer', userPrompt: 'Write: {{PREVIOUS_OUTPUT}}' })],
    edges: [e('e1', 'n1', 'output', 'n2')],
  });
  await checkWidths(`/workflows/${wf.id}`, 'graph');
});

test('a YAML workflow: the toolbar is one row at 1440, 1100 and 900 px and every control stays reachable under its name', { timeout: TEST_TIMEOUT }, async () => {
  await checkWidths(`/workflows/${await yamlId()}`, 'yaml');
});

test('at 900 px the More menu opens from the keyboard, its actions work and close it; Escape gives focus back', { timeout: TEST_TIMEOUT }, async () => {
  const { page, errors, context } = await pool.open('dark', { width: 900, height: HEIGHT });
  try {
    await openEditor(page, `/workflows/${await yamlId()}`);
    const more = page.locator(MORE);
    const menu = page.locator(MENU);
    assert.equal(await more.getAttribute('aria-label'), 'More actions');
    // Keyboard: Enter on More opens it, Tab goes into it, Escape closes it and focus goes back to More.
    await more.focus();
    await page.keyboard.press('Enter');
    await menu.waitFor({ state: 'visible' });
    await page.keyboard.press('Tab');
    await until(async () => (await page.evaluate(() => document.activeElement?.dataset.testid)) === 'auto-layout', 'Tab to move into the menu');
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'hidden' });
    await until(async () => (await page.evaluate(() => document.activeElement?.dataset.testid)) === 'toolbar-more', 'focus back on More');
    // Snap from the menu: the menu stays open (a setting, not an action).
    await more.click();
    await menu.waitFor({ state: 'visible' });
    const snap = page.getByRole('checkbox', { name: 'Snap', exact: true });
    const was = await snap.isChecked();
    await snap.click();
    assert.equal(await snap.isChecked(), !was, 'Snap toggles from the menu');
    assert.ok(await menu.isVisible(), 'the menu stays open after Snap');
    // Fit from the menu: it acts and closes the menu.
    await page.getByRole('button', { name: 'Fit', exact: true }).click();
    await menu.waitFor({ state: 'hidden' });
    // Auto-layout from the menu (it writes positions; the page stays whole).
    await more.click();
    await page.getByRole('button', { name: 'Auto-layout', exact: true }).click();
    await menu.waitFor({ state: 'hidden' });
    await until(async () => !(await page.evaluate(() => document.documentElement.hasAttribute('data-layout-busy'))), 'the layout to finish');
    assertOneRow(await layout(page), 'yaml at 900 px after the menu');
    await screenshot(page, 'toolbar-yaml-900-dark');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('a blocked, unsaved graph: one row at every width from 1600 to 860 px; at 900 the blocker is an icon, named by its text, that opens the problems', { timeout: TEST_TIMEOUT }, async () => {
  // An if node with nowhere to go: an error (if_no_branch), so Run is blocked.
  const wf = await stack.api.createWorkflow('Blocked', {
    nodes: [n('n1', 'start', 0, 0), n('n2', 'if', 300, 0, { conditions: [{ operator: 'equal', value: 'x' }] })],
    edges: [e('e1', 'n1', 'output', 'n2')],
  });
  const { page, errors, context } = await pool.open('light', { width: 1600, height: HEIGHT });
  try {
    await openEditor(page, `/workflows/${wf.id}`);
    const blocker = page.locator(tid('run-blocker'));
    await textMatches(blocker, /^Fix \d+ errors? to run$/, 'the blocker');
    // Unsaved: the name changes, Run says Save & Run, the dirty mark shows.
    await page.locator(tid('workflow-name')).fill('Blocked, and renamed to something far too long to fit in the toolbar');
    await page.locator(tid('dirty-indicator')).waitFor();
    await textMatches(page.locator(tid('run')), /^Save & Run$/, 'Run says Save & Run');
    for (let w = 1600; w >= 860; w -= 20) {
      await resize(page, w);
      assertOneRow(await layout(page), `blocked graph at ${w} px`);
    }
    await resize(page, 900);
    const btn = page.getByRole('button', { name: /^Fix \d+ errors? to run$/ });
    assert.ok(await reachable(page, btn), 'the blocker is reachable at 900 px');
    const box = await btn.boundingBox();
    assert.ok(box.width < 40, `the blocker is an icon at 900 px (${box.width} px wide)`);
    await textMatches(blocker, /^Fix \d+ errors? to run$/, 'the blocker keeps its text at 900 px');
    await screenshot(page, 'toolbar-blocked-900');
    await page.locator(tid('tab-inspect')).click();
    await btn.click();
    await page.locator(tid('problems-panel')).waitFor();
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});
