import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { applyEvents, emptyRunLog, type RunLog } from '../run/reducer';
import { openRunStream, type SocketLike } from './runStream';
import type { RunEvent } from './types';

/**
 * A real loopback WebSocket server standing in for /api/runs/{id}/ws: it
 * sends stored events with seq > after, then whatever is appended live.
 */
class FakeRunServer {
  events: RunEvent[] = [];
  afters: number[] = [];
  /** When set, ignores ?after and replays everything (overlap). */
  replayAll = false;
  private http: Server;
  private wss: WebSocketServer;
  private sockets = new Set<WebSocket>();
  terminal = false;

  constructor() {
    this.http = createServer();
    this.wss = new WebSocketServer({ server: this.http });
    this.wss.on('connection', (ws, req) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const after = Number(url.searchParams.get('after') ?? '0');
      this.afters.push(after);
      this.sockets.add(ws);
      ws.on('close', () => this.sockets.delete(ws));
      for (const e of this.events) if (this.replayAll || e.seq > after) ws.send(JSON.stringify(e));
      if (this.terminal) ws.close(1000);
    });
  }
  async listen(): Promise<string> {
    await new Promise<void>((r) => this.http.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }
  add(type: string, content = '', nodeId = 'a'): void {
    const e: RunEvent = { seq: this.events.length + 1, runId: 'r1', nodeId, type, content, timestamp: new Date().toISOString() };
    this.events.push(e);
    for (const s of this.sockets) s.send(JSON.stringify(e));
  }
  /** Drops every connection without a close handshake. */
  drop(): void {
    for (const s of this.sockets) s.terminate();
  }
  finish(): void {
    this.terminal = true;
    this.add('run_status', 'completed', 'system');
    for (const s of this.sockets) s.close(1000);
  }
  async stop(): Promise<void> {
    for (const s of this.sockets) s.terminate();
    await new Promise<void>((r) => this.wss.close(() => r()));
    await new Promise<void>((r) => this.http.close(() => r()));
  }
}

let server: FakeRunServer | null = null;
afterEach(async () => {
  await server?.stop();
  server = null;
});

function follow(base: string) {
  let log: RunLog = emptyRunLog();
  const received: number[] = [];
  const states: string[] = [];
  const stream = openRunStream({
    runId: 'r1',
    baseUrl: base,
    baseDelayMs: 20,
    maxDelayMs: 100,
    getLastSeq: () => log.lastSeq,
    onEvents: (evs) => {
      received.push(...evs.map((e) => e.seq));
      log = applyEvents(log, evs);
    },
    onState: (s) => states.push(s),
    isDone: () => log.runStatus === 'completed',
    socketFactory: (url) => new WebSocket(url) as unknown as SocketLike,
  });
  return { stream, received, states, log: () => log };
}

describe('openRunStream against a loopback server', () => {
  it('replays, streams live, resumes after a dropped connection without loss or duplicates, and stops when done', async () => {
    server = new FakeRunServer();
    const base = await server.listen();
    server.add('step_start');
    server.add('llm_delta', 'a');
    server.add('llm_delta', 'b');
    const f = follow(base);
    await vi.waitFor(() => expect(f.log().lastSeq).toBe(3), { timeout: 15000 });
    server.add('llm_delta', 'c');
    await vi.waitFor(() => expect(f.log().lastSeq).toBe(4), { timeout: 15000 });

    server.drop();
    // Written while the client is disconnected: must arrive after reconnect.
    server.add('llm_delta', 'd');
    server.add('llm_response', 'abcde');
    await vi.waitFor(() => expect(f.log().lastSeq).toBe(6), { timeout: 15000 });
    expect(server.afters).toEqual([0, 4]);

    server.add('step_end');
    server.finish();
    await vi.waitFor(() => expect(f.states.at(-1)).toBe('closed'), { timeout: 15000 });
    expect(f.received).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(f.log().nodes.a!.text).toBe('abcde');
    expect(f.states).toContain('reconnecting');
    f.stream.close();
  });

  it('drops overlapping events when a server resends from the start', async () => {
    server = new FakeRunServer();
    server.replayAll = true;
    const base = await server.listen();
    server.add('step_start');
    server.add('llm_delta', 'x');
    const f = follow(base);
    await vi.waitFor(() => expect(f.log().lastSeq).toBe(2), { timeout: 15000 });
    server.drop();
    server.add('llm_delta', 'y');
    await vi.waitFor(() => expect(f.log().lastSeq).toBe(3), { timeout: 15000 });
    expect(f.log().nodes.a!.text).toBe('xy');
    expect(f.log().lines).toHaveLength(2);
    f.stream.close();
  });

  it('keeps retrying while the server is down', async () => {
    server = new FakeRunServer();
    const base = await server.listen();
    await server.stop();
    server = null;
    const f = follow(base);
    await vi.waitFor(() => expect(f.states.filter((s) => s === 'reconnecting').length).toBeGreaterThan(2), { timeout: 15000 });
    f.stream.close();
  });
});
