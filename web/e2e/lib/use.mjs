// useStack: the set-up most browser test files share.
import { after, before } from 'node:test';
import { launchBrowser } from './browser.mjs';
import { startStack } from './stack.mjs';

// useStack starts a stack (startStack(o)) and a browser before the file's
// tests and stops both after them, whichever of them started. set receives
// the two once both are up (and may be async: more set-up, awaited).
export function useStack(o, set) {
  let stack;
  let browser;
  before(async () => {
    stack = await startStack(o);
    browser = await launchBrowser();
    await set(stack, browser);
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });
}
