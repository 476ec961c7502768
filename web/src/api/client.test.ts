import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { api, ApiError, setApiBase, setApiListener } from './client';

let server: Server;
let base = '';
const seen: Array<{ method: string; url: string; body: string }> = [];
let events: string[] = [];

function handler(req: IncomingMessage, res: ServerResponse) {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', body });
    const json = (status: number, v: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    if (req.url === '/api/workflows' && req.method === 'GET') return json(200, [{ id: 'w1', name: 'One', kind: 'graph', version: 1 }]);
    if (req.url === '/api/workflows/w1' && req.method === 'PUT')
      return json(409, { error: { code: 'conflict', message: 'version 1 is stale; latest is 2' } });
    if (req.url === '/api/runs' && req.method === 'POST')
      return json(400, {
        error: { code: 'invalid_graph', message: 'graph is invalid', problems: [{ code: 'no_start', severity: 'error', message: 'no start node' }] },
      });
    if (req.url === '/api/config') return json(401, { error: { code: 'unauthorized', message: 'sign in' } });
    if (req.url === '/login') return json(req.method === 'POST' && body.includes('good') ? 200 : 401, {});
    if (req.url?.startsWith('/api/runs?')) return json(200, []);
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end('<!doctype html><title>spa</title>');
  });
}

beforeAll(async () => {
  server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  setApiBase('');
  setApiListener({});
});
beforeEach(() => {
  setApiBase(base);
  events = [];
  seen.length = 0;
  setApiListener({
    onReachable: () => events.push('ok'),
    onUnreachable: () => events.push('unreachable'),
    onUnauthorized: () => events.push('unauthorized'),
  });
});

async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error('expected a failure');
}

describe('api client over loopback HTTP', () => {
  it('parses JSON responses and reports the server reachable', async () => {
    const list = await api.listWorkflows();
    expect(list[0]!.id).toBe('w1');
    expect(events).toEqual(['ok']);
  });

  it('turns a 409 into a conflict error carrying the server message', async () => {
    const e = await failure(api.updateWorkflow('w1', { name: 'n', description: '', graph: { nodes: [], edges: [] }, version: 1 }));
    expect(e.conflict).toBe(true);
    expect(e.message).toContain('stale');
    expect(JSON.parse(seen[0]!.body)).toMatchObject({ version: 1, graph: { nodes: [], edges: [] } });
  });

  it('carries validation problems of a refused run', async () => {
    const e = await failure(api.createRun({ workflowId: 'w1' }));
    expect(e.status).toBe(400);
    expect(e.problems.map((p) => p.code)).toEqual(['no_start']);
  });

  it('tells the app to sign in on 401', async () => {
    const e = await failure(api.config());
    expect(e.unauthorized).toBe(true);
    expect(events).toContain('unauthorized');
  });

  it('treats an HTML answer (a static server) as unreachable', async () => {
    const e = await failure(api.getRun('x'));
    expect(e.unreachable).toBe(true);
    expect(events).toEqual(['unreachable']);
  });

  it('treats a refused connection as unreachable', async () => {
    setApiBase('http://127.0.0.1:1');
    const e = await failure(api.listWorkflows());
    expect(e.unreachable).toBe(true);
  });

  it('builds run list queries and signs in', async () => {
    await api.listRuns({ workflowId: 'w 1', limit: 5, status: '' });
    expect(seen[0]!.url).toBe('/api/runs?workflowId=w+1&limit=5');
    await api.login('good');
    const e = await failure(api.login('bad'));
    expect(e.unauthorized).toBe(true);
  });
});
