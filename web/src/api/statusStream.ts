import type { RunStatusMessage, WorkflowChangedMessage } from './types';
import { wsUrl, type SocketFactory, type SocketLike } from './runStream';

/** What else GET /api/ws tells, besides run statuses. */
export type StatusStreamHandlers = {
  /** A YAML workflow file changed (type workflow_changed). */
  onWorkflowChanged?: (m: WorkflowChangedMessage) => void;
  /** The socket opened (true) or closed (false; it reconnects by itself). */
  onConnection?: (open: boolean) => void;
};

/** Follows GET /api/ws (status of every run, YAML file changes) with reconnect; returns a stopper. */
export function openStatusStream(
  onMessage: (m: RunStatusMessage) => void,
  socketFactory: SocketFactory = (url) => new WebSocket(url) as unknown as SocketLike,
  handlers: StatusStreamHandlers = {},
): () => void {
  let stopped = false;
  let sock: SocketLike | null = null;
  let attempts = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const connect = () => {
    if (stopped) return;
    let s: SocketLike;
    try {
      s = socketFactory(wsUrl('/api/ws'));
    } catch {
      schedule();
      return;
    }
    sock = s;
    s.onopen = () => {
      attempts = 0;
      handlers.onConnection?.(true);
    };
    s.onmessage = (ev) => {
      let m: unknown;
      try {
        m = JSON.parse(String(ev.data));
      } catch {
        return; // ignore junk
      }
      if (!m || typeof m !== 'object') return;
      const o = m as { type?: unknown; runId?: unknown; id?: unknown };
      if (o.type === 'workflow_changed') {
        if (typeof o.id === 'string') handlers.onWorkflowChanged?.(m as WorkflowChangedMessage);
      } else if (typeof o.runId === 'string') onMessage(m as RunStatusMessage);
    };
    s.onerror = () => {};
    s.onclose = () => {
      sock = null;
      handlers.onConnection?.(false);
      schedule();
    };
  };
  const schedule = () => {
    if (stopped) return;
    attempts++;
    timer = setTimeout(connect, Math.min(30_000, 1000 * 2 ** Math.min(attempts - 1, 5)));
  };
  connect();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    if (sock) {
      sock.onclose = null;
      sock.close(1000);
      handlers.onConnection?.(false);
    }
  };
}
