import type { RunStatusMessage } from './types';
import { wsUrl, type SocketFactory, type SocketLike } from './runStream';

/** Follows GET /api/ws (status of every run) with reconnect; returns a stopper. */
export function openStatusStream(
  onMessage: (m: RunStatusMessage) => void,
  socketFactory: SocketFactory = (url) => new WebSocket(url) as unknown as SocketLike,
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
    };
    s.onmessage = (ev) => {
      try {
        const m = JSON.parse(String(ev.data)) as RunStatusMessage;
        if (m && typeof m.runId === 'string') onMessage(m);
      } catch {
        /* ignore junk */
      }
    };
    s.onerror = () => {};
    s.onclose = () => {
      sock = null;
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
    }
  };
}
