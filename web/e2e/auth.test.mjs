// Token mode. With a token given (SWITCHYARD_TOKEN) the UI asks for it,
// refuses a wrong one, and works (API and websockets) once signed in.
// Without one, serve makes a token and prints the address to open with it:
// the UI trades it for its session cookie and takes it out of the address.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchBrowser, newPage, screenshot } from './lib/browser.mjs';
import { startStack } from './lib/stack.mjs';
import {
  addNodeByClick,
  assertNoPageErrors,
  clickRun,
  connect,
  logLines,
  TEST_TIMEOUT,
  textMatches,
  tid,
  waitNodeStatus,
  waitRunnable,
  waitRunStatus,
} from './lib/ui.mjs';

const TOKEN = 'e2e-secret-token-0123456789abcdef';
let stack;
let printed; // a stack with the token serve made
let browser;

before(async () => {
  stack = await startStack({ name: 'auth', latency: '300ms', token: TOKEN });
  printed = await startStack({ name: 'auth-printed', latency: '0s' });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await stack?.stop();
  await printed?.stop();
});

test('with a given token the UI shows the sign-in page and works once signed in', { timeout: TEST_TIMEOUT }, async () => {
  const { context, page, errors } = await newPage(browser, { baseURL: stack.baseURL, theme: 'light' });
  try {
    // Without a session the API answers 401.
    const res = await fetch(`${stack.baseURL}/api/workflows`);
    assert.equal(res.status, 401);

    await page.goto('/');
    await page.locator(tid('signin')).waitFor();
    assert.equal(await page.locator(tid('signin-submit')).isDisabled(), true, 'no empty token');
    await screenshot(page, 'signin-light');

    await page.locator(tid('signin-token')).fill('not-the-token');
    await page.locator(tid('signin-submit')).click();
    await textMatches(page.locator(`${tid('signin')} [role="alert"]`), /not accepted/i, 'the refusal');
    assert.equal(await page.locator(tid('canvas')).count(), 0, 'still signed out');

    await page.locator(tid('signin-token')).fill(TOKEN);
    await page.locator(tid('signin-submit')).click();
    await page.locator(tid('canvas')).waitFor();
    await textMatches(page.locator(tid('server-status')), /Connected/, 'server status');
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'switchyard_session');
    assert.ok(session?.httpOnly, 'an HttpOnly session cookie was set');
    assert.ok(!JSON.stringify(cookies).includes(TOKEN), 'the cookie does not hold the token');

    // Draw, save and run: the API and the run's websocket take the session.
    const agent = await addNodeByClick(page, 'agent');
    await connect(page, 'n1', 'output', agent);
    await page.locator(tid('run-input')).fill('hello');
    await waitRunnable(page);
    const runId = await clickRun(page);
    await waitRunStatus(page, 'completed');
    await waitNodeStatus(page, agent, 'completed');
    await textMatches(page.locator(tid('stream-state')), /complete/, 'stream state');
    const lines = await logLines(page);
    assert.ok(lines.some((l) => l.type === 'llm_response' && l.text === 'echo: hello'), 'the reply streamed in');
    assert.equal((await stack.api.getRun(runId)).status, 'completed');

    // Still signed in after a reload.
    await page.reload();
    await page.locator(tid('run-canvas')).waitFor();
    assert.equal(await page.locator(tid('signin')).count(), 0);
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }
});

test('the address serve prints signs the UI in and leaves no token behind', { timeout: TEST_TIMEOUT }, async () => {
  assert.ok(printed.printedToken.length >= 40, 'serve printed a long random token');
  // Nothing works without it, the API included.
  assert.equal((await fetch(`${printed.baseURL}/api/workflows`)).status, 401);

  const { context, page, errors } = await newPage(browser, { baseURL: printed.baseURL, theme: 'light' });
  try {
    // A visit without a session shows the sign-in page.
    await page.goto('/');
    await page.locator(tid('signin')).waitFor();

    // The printed address (here with a path): signed in, on that page, and
    // the token gone from the address bar and the history entry.
    await page.goto(`/approvals?token=${printed.printedToken}`);
    await page.locator(tid('inbox')).waitFor();
    await textMatches(page.locator(tid('server-status')), /Connected/, 'server status');
    const href = await page.evaluate(() => location.href);
    assert.equal(new URL(href).pathname, '/approvals');
    assert.ok(!href.includes('token'), `the address still holds the token: ${href}`);
    assert.equal(await page.locator(tid('signin')).count(), 0);
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'switchyard_session');
    assert.ok(session?.httpOnly, 'an HttpOnly session cookie was set');
    assert.ok(!JSON.stringify(cookies).includes(printed.printedToken), 'the cookie does not hold the token');
    // Going back does not bring the token back either.
    await page.goto('/runs');
    await page.goBack();
    assert.ok(!(await page.evaluate(() => location.href)).includes('token'), 'the history entry kept the token');
    assertNoPageErrors(errors);
  } finally {
    await context.close();
  }

  // A stale token (the server restarted): the sign-in page says why, and
  // the address is clean.
  const fresh = await newPage(browser, { baseURL: printed.baseURL, theme: 'light' });
  try {
    await fresh.page.goto('/?token=not-the-token');
    await textMatches(fresh.page.locator(`${tid('signin')} [role="alert"]`), /not accepted/i, 'the refusal');
    assert.ok(!(await fresh.page.evaluate(() => location.href)).includes('token'));
  } finally {
    await fresh.context.close();
  }
});
