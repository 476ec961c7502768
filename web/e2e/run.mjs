#!/usr/bin/env node
// Entry point of `npm run test:e2e`: builds the web UI (web/dist, which the
// binary embeds) and the switchyard binary once, then runs every
// web/e2e/*.test.mjs file with node's test runner. Each test file starts its
// own fake LLM and server on a fresh data directory.
//
// Without /usr/bin/chromium the run is skipped (exit 0) unless CI is set:
// in CI a missing browser is an error.
//
// Environment:
//   SWITCHYARD_E2E_CHROMIUM     browser binary (default /usr/bin/chromium)
//   SWITCHYARD_E2E_SKIP_WEB_BUILD=1  use web/dist as it is
//   SWITCHYARD_E2E_CONCURRENCY  test files run at once (default 2)
//   SWITCHYARD_E2E_BIN          a prebuilt binary to test instead of building one
// Arguments are passed to `node --test` (e.g. a file, or --test-name-pattern).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM, chromiumAvailable } from './lib/browser.mjs';
import { REPO_DIR, WEB_DIR, buildBinary } from './lib/stack.mjs';

const ci = !!process.env.CI && process.env.CI !== 'false' && process.env.CI !== '0';

if (!chromiumAvailable()) {
  if (ci) {
    console.error(`e2e: ${CHROMIUM} is missing and CI is set: install it (apt-get install -y chromium).`);
    process.exit(1);
  }
  console.log(`e2e: SKIPPED: ${CHROMIUM} not found. Install it with: apt-get install -y chromium`);
  process.exit(0);
}

const t0 = Date.now();
if (process.env.SWITCHYARD_E2E_SKIP_WEB_BUILD !== '1') {
  console.log('e2e: building the web UI (npm run build:web)');
  const r = spawnSync('npm', ['run', 'build:web', '--silent'], { cwd: REPO_DIR, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('e2e: the web UI build failed');
    process.exit(1);
  }
}

const given = process.env.SWITCHYARD_E2E_BIN;
const binDir = given ? null : mkdtempSync(join(tmpdir(), 'switchyard-e2e-bin-'));
const bin = given || join(binDir, 'switchyard');
if (given) {
  if (!existsSync(given)) {
    console.error(`e2e: SWITCHYARD_E2E_BIN=${given} does not exist`);
    process.exit(1);
  }
  console.log(`e2e: using the prebuilt binary ${given} (its embedded UI is what gets tested)`);
} else {
  console.log('e2e: building the switchyard binary');
  try {
    const ms = await buildBinary(bin);
    console.log(`e2e: built in ${(ms / 1000).toFixed(1)} s (setup ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (e) {
    console.error(`e2e: ${e.message}`);
    rmSync(binDir, { recursive: true, force: true });
    process.exit(1);
  }
}

const passed = process.argv.slice(2);
const files = passed.some((a) => a.endsWith('.mjs'))
  ? []
  : readdirSync(join(WEB_DIR, 'e2e'))
      .filter((f) => f.endsWith('.test.mjs'))
      .sort()
      .map((f) => join(WEB_DIR, 'e2e', f));
const concurrency = process.env.SWITCHYARD_E2E_CONCURRENCY ?? '2';
const child = spawn(process.execPath, ['--test', `--test-concurrency=${concurrency}`, ...passed, ...files], {
  cwd: REPO_DIR,
  stdio: 'inherit',
  env: { ...process.env, SWITCHYARD_E2E_BIN: bin },
});
const stop = (sig) => child.kill(sig);
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
child.on('exit', (code, signal) => {
  if (binDir) rmSync(binDir, { recursive: true, force: true });
  console.log(`e2e: total ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(code ?? (signal ? 1 : 0));
});
