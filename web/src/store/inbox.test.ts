import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setApiBase } from '../api/client';
import type { Approval } from '../api/types';
import { approvalKey, approvalNotice, arrived, useInbox } from './inbox';

const a = (runId: string, nodeId: string, since = '2026-11-26T10:00:00Z'): Approval => ({
  runId,
  nodeId,
  since,
  workflowName: 'W',
  kind: 'graph',
  prompt: 'ok?',
  input: 'x',
  runInput: '',
});

describe('arrived', () => {
  it('announces nothing on the first load', () => {
    expect(arrived(null, [a('r1', 'n')])).toEqual([]);
  });
  it('finds the approvals that are new', () => {
    const prev = [a('r1', 'n'), a('r2', 'n')];
    const next = [a('r2', 'n'), a('r3', 'n'), a('r1', 'm')];
    expect(arrived(prev, next).map(approvalKey)).toEqual([approvalKey(a('r3', 'n')), approvalKey(a('r1', 'm'))]);
  });
  it('counts a node asked again after a reject as new', () => {
    const prev = [a('r1', 'n', '2026-11-26T10:00:00Z')];
    expect(arrived(prev, [a('r1', 'n', '2026-11-26T10:05:00Z')])).toHaveLength(1);
  });
  it('announces nothing when approvals only go away', () => {
    expect(arrived([a('r1', 'n'), a('r2', 'n')], [a('r2', 'n')])).toEqual([]);
  });
});

describe('tool approvals', () => {
  const tool = (callId: string): Approval => ({
    ...a('r1', 'agent'),
    prompt: 'Allow Write notes.md?',
    input: 'the task',
    tool: { callId, tool: 'Write', arguments: { file_path: 'notes.md', content: 'hi' }, diff: '--- a/notes.md\n+++ b/notes.md\n@@ -0,0 +1 @@\n+hi\n' },
  });
  it('tells apart two tool calls a node waits on at the same moment', () => {
    expect(approvalKey(tool('call_1'))).not.toBe(approvalKey(tool('call_2')));
    expect(arrived([tool('call_1')], [tool('call_2')])).toHaveLength(1);
    expect(arrived([tool('call_1')], [tool('call_1')])).toEqual([]);
  });
  it('says in a notification which tool waits', () => {
    expect(approvalNotice(tool('c'))).toEqual({ title: 'Tool call needs approval: W', body: 'agent: Allow Write notes.md?' });
    expect(approvalNotice(a('r1', 'n'))).toEqual({ title: 'Approval needed: W', body: 'n: ok?' });
  });

  describe('against a server', () => {
    let server: Server;
    let pending: Approval[] = [];
    const posts: Array<{ url: string; body: unknown }> = [];
    beforeAll(async () => {
      server = createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          res.writeHead(200, { 'Content-Type': 'application/json' });
          if (req.method === 'GET' && req.url === '/api/approvals') return res.end(JSON.stringify(pending));
          if (req.method === 'POST' && req.url?.startsWith('/api/runs/')) {
            posts.push({ url: req.url, body: JSON.parse(body) });
            pending = pending.filter((p) => !req.url!.endsWith(`/${p.nodeId}`));
            return res.end(JSON.stringify({ runId: 'r1', status: 'running', createdAt: '2026-11-26T10:00:00Z' }));
          }
          res.end('{}');
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      setApiBase(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
    afterAll(async () => {
      setApiBase('');
      await new Promise<void>((r) => server.close(() => r()));
    });

    it('lists a waiting tool call with its arguments and diff, and rejects it with a note', async () => {
      pending = [tool('call_7'), a('r2', 'gate')];
      await useInbox.getState().refresh();
      const items = useInbox.getState().items!;
      expect(items.map((x) => [x.nodeId, x.tool?.tool ?? null])).toEqual([
        ['agent', 'Write'],
        ['gate', null],
      ]);
      expect(items[0]!.tool).toMatchObject({ callId: 'call_7', arguments: { file_path: 'notes.md' } });
      expect(items[0]!.tool!.diff).toContain('+hi');

      await useInbox.getState().decide(items[0]!, 'reject', 'write to docs/ instead');
      expect(posts).toEqual([{ url: '/api/runs/r1/approvals/agent', body: { decision: 'reject', note: 'write to docs/ instead' } }]);
      await until(() => useInbox.getState().items?.length === 1);
      expect(useInbox.getState().items!.map((x) => x.nodeId)).toEqual(['gate']);
      expect(useInbox.getState().busy).toEqual({});
    });
  });
});

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(cond()).toBe(true);
}
