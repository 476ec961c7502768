import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import type { SocketLike } from './runStream';
import { openStatusStream } from './statusStream';
import type { RunStatusMessage, WorkflowChangedMessage } from './types';

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('openStatusStream', () => {
  it('hands run statuses and workflow_changed messages (one socket, a real loopback server) to their handlers, and says when it opens and closes', async () => {
    const http = createServer();
    const wss = new WebSocketServer({ server: http });
    const paths: string[] = [];
    wss.on('connection', (ws, req) => {
      paths.push(req.url ?? '');
      ws.send(JSON.stringify({ runId: 'r1', status: 'running', waitingForInput: false }));
      ws.send(JSON.stringify({ type: 'workflow_changed', id: 'yaml.a.yaml', path: 'a.yaml', hash: 'abc' }));
      ws.send('not json');
      ws.send(JSON.stringify({ type: 'something_new' }));
      ws.send(JSON.stringify({ type: 'workflow_changed', id: 'yaml.a.yaml', path: 'a.yaml', deleted: true }));
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    vi.stubGlobal('location', { protocol: 'http:', host: `127.0.0.1:${(http.address() as AddressInfo).port}` });

    const statuses: RunStatusMessage[] = [];
    const changes: WorkflowChangedMessage[] = [];
    const conn: boolean[] = [];
    const stop = openStatusStream(
      (m) => statuses.push(m),
      (url) => new WebSocket(url) as unknown as SocketLike,
      { onWorkflowChanged: (m) => changes.push(m), onConnection: (open) => conn.push(open) },
    );
    try {
      await vi.waitFor(() => expect(changes).toHaveLength(2), { timeout: 30_000 });
      expect(paths).toEqual(['/api/ws']);
      expect(statuses.map((m) => m.runId)).toEqual(['r1']);
      expect(changes).toEqual([
        { type: 'workflow_changed', id: 'yaml.a.yaml', path: 'a.yaml', hash: 'abc' },
        { type: 'workflow_changed', id: 'yaml.a.yaml', path: 'a.yaml', deleted: true },
      ]);
      expect(conn).toEqual([true]);
    } finally {
      stop();
      wss.close();
      http.close();
    }
    expect(conn).toEqual([true, false]);
  });
});
