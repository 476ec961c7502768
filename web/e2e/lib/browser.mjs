// Headless Chromium through playwright-core's library API (the Debian
// chromium package; no browser downloads).
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { RESULTS_DIR } from './stack.mjs';

export const CHROMIUM = process.env.SWITCHYARD_E2E_CHROMIUM || '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-quic',
];

export function chromiumAvailable() {
  return existsSync(CHROMIUM);
}

export async function launchBrowser() {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/**
 * Records every data-run-status value a canvas node shows, so a test can
 * assert "was running, then completed" without racing a short state.
 */
function recordRunStatuses() {
  const seen = {};
  window.__runStatusSeen = seen;
  const note = (el) => {
    const id = el.getAttribute('data-testid')?.replace(/^node-/, '');
    const st = el.getAttribute('data-run-status');
    if (!id || !st) return;
    const list = (seen[id] ??= []);
    if (list[list.length - 1] !== st) list.push(st);
  };
  const start = () => {
    new MutationObserver((muts) => {
      for (const m of muts) {
        if (m.type === 'attributes') note(m.target);
        for (const n of m.addedNodes ?? []) {
          if (n.nodeType !== 1) continue;
          if (n.hasAttribute('data-run-status')) note(n);
          for (const c of n.querySelectorAll('[data-run-status]')) note(c);
        }
      }
    }).observe(document.documentElement, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-run-status'] });
  };
  if (document.documentElement) start();
  else document.addEventListener('DOMContentLoaded', start);
}

/**
 * A fresh context (own cookies and storage) and page. Uncaught page errors
 * are collected in `errors`; tests assert there are none.
 * With `token` (a stack's), the context signs in first (POST /login: the
 * session cookie the UI gets from the address `switchyard serve` prints;
 * auth.test.mjs goes through that address itself).
 * @param {import('playwright-core').Browser} browser
 * @param {{theme?: 'light'|'dark', baseURL: string, token?: string}} o
 */
export async function newPage(browser, o) {
  const context = await browser.newContext({
    viewport: { width: 1440, height: 900 },
    baseURL: o.baseURL,
    acceptDownloads: true,
    colorScheme: o.theme === 'dark' ? 'dark' : 'light',
  });
  context.setDefaultTimeout(15_000);
  if (o.theme) {
    await context.addInitScript((t) => {
      try {
        localStorage.setItem('switchyard.theme', t);
      } catch {
        /* ignore */
      }
    }, o.theme);
  }
  await context.addInitScript(recordRunStatuses);
  if (o.token) {
    // The request context shares the browser context's cookies.
    const res = await context.request.post('/login', { data: { token: o.token } });
    if (!res.ok()) throw new Error(`sign-in for the test page: HTTP ${res.status()} ${await res.text()}`);
  }
  const page = await context.newPage();
  const errors = [];
  const consoleErrors = [];
  page.on('pageerror', (e) => errors.push(e));
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  // Cancel asks for confirmation; tests always confirm.
  page.on('dialog', (d) => void d.accept());
  return { context, page, errors, consoleErrors };
}

/** Saves a PNG of the page under web/test-results/. */
export async function screenshot(page, name) {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}

/**
 * One signed-in context per theme, shared by a file's tests: `open` gives a
 * fresh page in it (its own error list). Files that open many pages use it
 * to stay under the server's sign-in rate limit (10 at once, then one per 6 s).
 * @param {import('playwright-core').Browser} browser
 * @param {{baseURL: string, token?: string}} o
 */
export function contextPool(browser, o) {
  const contexts = {};
  return {
    async open(theme = 'light', size) {
      if (!contexts[theme]) {
        const first = await newPage(browser, { ...o, theme });
        contexts[theme] = first.context;
        await first.page.close();
      }
      const page = await contexts[theme].newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(e));
      page.on('dialog', (d) => void d.accept());
      if (size) await page.setViewportSize(size);
      return { page, errors, context: { close: () => page.close() } };
    },
    async close() {
      for (const c of Object.values(contexts)) await c.close();
    },
  };
}
