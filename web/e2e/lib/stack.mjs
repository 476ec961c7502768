// The processes one e2e test file needs: the switchyard binary (built once
// per `npm run test:e2e`), the fake OpenAI-compatible endpoint and
// `switchyard serve` on a fresh data directory. Every process started here
// is stopped by its own pid in stop(); nothing is killed by name.
import { spawn, execFile } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
export const WEB_DIR = resolve(here, '../..');
export const REPO_DIR = resolve(WEB_DIR, '..');
export const RESULTS_DIR = join(WEB_DIR, 'test-results');
export const SHARED_DIR = resolve(REPO_DIR, '../shared');

const pexec = promisify(execFile);

/**
 * Returns the path of a switchyard binary built from this checkout:
 * $SWITCHYARD_E2E_BIN when the runner already built one, else a fresh build
 * (Go's build cache makes a repeat cheap).
 */
export async function switchyardBinary() {
  const given = process.env.SWITCHYARD_E2E_BIN;
  if (given && existsSync(given)) return given;
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-e2e-bin-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'switchyard');
  await buildBinary(bin);
  process.env.SWITCHYARD_E2E_BIN = bin;
  return bin;
}

export async function buildBinary(out) {
  const t0 = Date.now();
  try {
    await pexec('go', ['build', '-o', out, './cmd/switchyard'], { cwd: REPO_DIR, maxBuffer: 16 << 20 });
  } catch (e) {
    throw new Error(`go build ./cmd/switchyard failed:\n${e.stderr || e.message}`);
  }
  return Date.now() - t0;
}

const live = new Set();
// A test process that dies must not leave servers behind.
process.on('exit', () => {
  for (const p of live) {
    try {
      p.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
});

/** Waits until a line of the stream matches re; resolves with the match. */
function waitForLine(stream, re, what, child, timeoutMs = 30_000) {
  return new Promise((resolvePromise, reject) => {
    let buf = '';
    const timer = setTimeout(() => done(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; output so far:\n${buf}`)), timeoutMs);
    const onData = (chunk) => {
      buf += chunk.toString();
      const m = re.exec(buf);
      if (m) done(null, m);
    };
    const onExit = (code) => done(new Error(`${what}: process exited with code ${code} before it was ready; output:\n${buf}`));
    const done = (err, m) => {
      clearTimeout(timer);
      stream.off('data', onData);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolvePromise(m);
    };
    stream.on('data', onData);
    child.on('exit', onExit);
  });
}

function startProcess(bin, args, env, logPath) {
  const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  child.on('exit', () => live.delete(child));
  if (logPath) {
    const log = createWriteStream(logPath);
    child.stdout.on('data', (d) => log.write(d));
    child.stderr.on('data', (d) => log.write(d));
    child.on('exit', () => log.end());
  } else {
    child.stdout.resume();
    child.stderr.resume();
  }
  return child;
}

async function stopProcess(child, graceMs = 5_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(t);
}

/**
 * Starts fake-llm and `switchyard serve` on a fresh data directory.
 * `workflows` are YAML files (name → text) for the server's --workflows folder.
 * `args` are extra `serve` flags; `fakeArgs` extra `fake-llm` flags (e.g. `--script FILE`). Without `token`, serve makes one and prints
 * the address to open with it (`…/?token=…`): the stack reads it from there,
 * as a person would. `token` gives serve that token (SWITCHYARD_TOKEN)
 * instead; `noToken` starts it with --no-token.
 * The returned `token` signs in the API client and the browser (newPage).
 * @param {{name: string, latency?: string, token?: string, noToken?: boolean, workflows?: Record<string, string>, args?: string[], fakeArgs?: string[]}} o
 */
export async function startStack(o) {
  const bin = await switchyardBinary();
  mkdirSync(RESULTS_DIR, { recursive: true });
  const dataDir = await mkdtemp(join(tmpdir(), `switchyard-e2e-${o.name}-`));
  const procs = [];
  const stop = async () => {
    for (const p of procs.reverse()) await stopProcess(p);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const fake = startProcess(bin, ['fake-llm', '--addr', '127.0.0.1:0', '--latency', o.latency ?? '300ms', ...(o.fakeArgs ?? [])], {},
      join(RESULTS_DIR, `${o.name}-fake-llm.log`));
    procs.push(fake);
    const [, llmURL] = await waitForLine(fake.stdout, /fake-llm listening url=(\S+)/, 'fake-llm', fake);

    const wfDir = join(dataDir, 'workflows');
    mkdirSync(wfDir, { recursive: true });
    for (const [name, text] of Object.entries(o.workflows ?? {})) {
      mkdirSync(dirname(join(wfDir, name)), { recursive: true }); // "team/flow.yaml": a sub-folder
      writeFileSync(join(wfDir, name), text);
    }
    const args = ['serve', '--addr', '127.0.0.1:0', '--data', dataDir, '--workflows', wfDir];
    if (o.noToken) args.push('--no-token');
    args.push(...(o.args ?? []));
    const srv = startProcess(bin, args, {
      OPENAI_BASE_URL: llmURL, OPENAI_API_KEY: 'test', SWITCHYARD_TOKEN: o.token ?? '', SWITCHYARD_TOKEN_FILE: '',
      ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '',
    }, join(RESULTS_DIR, `${o.name}-server.log`));
    procs.push(srv);
    // The listening record, then the address to open (the last line of start-up).
    const [, addr, printed] = await waitForLine(srv.stderr,
      /msg=listening addr=(\S+)[\s\S]*?\nOpen \S+?(?:\/\?token=(\S+))? in your browser\n/, 'switchyard serve', srv);
    const baseURL = `http://${addr}`;
    const token = o.token ?? printed ?? '';
    if (!o.token && !o.noToken && !printed) throw new Error('switchyard serve printed no token in the address to open');
    return { baseURL, llmURL, dataDir, token, printedToken: printed ?? '', api: apiClient(baseURL, token), stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** A tiny JSON client for checking what the server holds. */
export function apiClient(baseURL, token) {
  const call = async (method, path, body) => {
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (token) headers.Authorization = `Bearer ${token}`;
    const res = await fetch(baseURL + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    const json = text ? JSON.parse(text) : undefined;
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status}: ${text}`);
    return json;
  };
  return {
    get: (p) => call('GET', p),
    post: (p, b) => call('POST', p, b ?? {}),
    put: (p, b) => call('PUT', p, b ?? {}),
    createWorkflow: (name, graph) => call('POST', '/api/workflows', { name, description: '', graph }),
    getRun: (id) => call('GET', `/api/runs/${id}`),
    events: (id) => call('GET', `/api/runs/${id}/events`),
  };
}
