import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { setApiBase } from '../api/client';
import type { Run } from '../api/types';
import { useFork } from './fork';

// The dialog's store against a loopback server that answers as
// POST /api/runs/{id}/fork does: 201 with the new run, 409 for a run that
// has not ended.
let server: Server;
const seen: Array<{ url: string; body: unknown }> = [];

function handler(req: IncomingMessage, res: ServerResponse) {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    const parsed = body ? (JSON.parse(body) as unknown) : undefined;
    seen.push({ url: req.url ?? '', body: parsed });
    const json = (status: number, v: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    if (req.method === 'POST' && req.url === '/api/runs/r1/fork') return json(201, { runId: 'r2', status: 'running', forkOf: { runId: 'r1', nodeId: 'a2' } });
    if (req.method === 'POST' && req.url === '/api/runs/busy/fork')
      return json(409, { error: { code: 'conflict', message: 'run busy is running: only a run that ended can be forked' } });
    json(404, { error: { code: 'not_found', message: 'no' } });
  });
}

beforeAll(async () => {
  server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  setApiBase(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
afterAll(async () => {
  setApiBase('');
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(() => {
  seen.length = 0;
  useFork.setState({ busy: false });
  useFork.getState().close();
});

const nodes = [
  { id: 'start', type: 'start', data: {} },
  { id: 'a1', type: 'agent', data: { agentName: 'Writer' } },
  { id: 'a2', type: 'agent', data: { agentName: 'Critic' } },
];
const edges = [
  { source: 'start', target: 'a1', sourceHandle: 'output' },
  { source: 'a1', target: 'a2', sourceHandle: 'output' },
];
const run = (runId: string, status: Run['status']): Run => ({
  runId,
  status,
  createdAt: '',
  outputs: { start: 'topic', a1: 'echo: topic', a2: 'echo: echo: topic' },
});
const st = () => useFork.getState();

describe('the Run from here store', () => {
  it('opens on an ended run with the reused outputs, pins one edited output and starts the fork', async () => {
    expect(st().open(run('r1', 'completed'), nodes, edges, 'a2')).toBe(true);
    expect(st().fromName).toBe('“Critic”');
    expect(st().reused.map((r) => [r.id, r.output])).toEqual([
      ['start', 'topic'],
      ['a1', 'echo: topic'],
    ]);
    st().edit('a1');
    expect(st().text).toBe('echo: topic'); // prefilled with the stored output
    st().setText('PINNED');
    await expect(st().submit()).resolves.toBe('r2');
    expect(seen).toEqual([{ url: '/api/runs/r1/fork', body: { nodeId: 'a2', pinned: { a1: 'PINNED' } } }]);
    expect(st().from).toBeNull(); // closed
  });

  it('sends no pinned output when the edit was dropped or left unchanged', async () => {
    st().open(run('r1', 'failed'), nodes, edges, 'a2');
    st().edit('a1');
    st().setText('changed');
    st().edit(null); // "Use the stored output"
    await st().submit();
    st().open(run('r1', 'cancelled'), nodes, edges, 'a2');
    st().edit('start');
    await st().submit();
    expect(seen.map((s) => s.body)).toEqual([{ nodeId: 'a2' }, { nodeId: 'a2' }]);
  });

  it('does not open on a run that has not ended', () => {
    for (const s of ['running', 'paused', 'pending', 'interrupted'] as const) {
      expect(st().open(run('r1', s), nodes, edges, 'a2')).toBe(false);
      expect(st().from).toBeNull();
    }
  });

  it('keeps the dialog open with the server’s refusal', async () => {
    st().open(run('busy', 'completed'), nodes, edges, 'a2');
    await expect(st().submit()).resolves.toBeNull();
    expect(st().error).toMatch(/only a run that ended can be forked/);
    expect(st().busy).toBe(false);
    expect(st().from).toBe('a2');
  });
});
