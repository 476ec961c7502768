import type { RunEvent } from './types';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'closed';

/** Minimal WebSocket surface so tests can pass Node's `ws` implementation. */
export interface SocketLike {
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  close(code?: number): void;
}
export type SocketFactory = (url: string) => SocketLike;

export type RunStreamOptions = {
  runId: string;
  /** Highest seq already applied; reconnects resume after it. */
  getLastSeq: () => number;
  /** Receives events in arrival order, batched per animation frame. */
  onEvents: (events: RunEvent[]) => void;
  onState?: (s: StreamState) => void;
  /** True once the run is terminal and its last event was applied. */
  isDone: () => boolean;
  /** HTTP catch-up used while the socket keeps failing. */
  fetchEvents?: (after: number) => Promise<RunEvent[]>;
  socketFactory?: SocketFactory;
  baseUrl?: string;
  maxDelayMs?: number;
  baseDelayMs?: number;
};

export function wsUrl(path: string, base?: string): string {
  if (base) return base.replace(/^http/, 'ws') + path;
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${location.host}${path}`;
}

const defaultFactory: SocketFactory = (url) => new WebSocket(url) as unknown as SocketLike;

/**
 * Follows one run's event stream: replays stored events after the last seq
 * seen, then live ones; reconnects with backoff passing ?after=lastSeq, so a
 * dropped connection loses nothing (the reducer drops any overlap by seq).
 * Messages are buffered and handed over once per animation frame so a fast
 * token stream does not re-render the page per chunk.
 */
export function openRunStream(o: RunStreamOptions): { close: () => void } {
  const factory = o.socketFactory ?? defaultFactory;
  const maxDelay = o.maxDelayMs ?? 10_000;
  const baseDelay = o.baseDelayMs ?? 500;
  let sock: SocketLike | null = null;
  let stopped = false;
  let attempts = 0;
  let retryTimer: ReturnType<typeof setTimeout> | null = null;
  let buffer: RunEvent[] = [];
  let frame: number | null = null;
  let flushTimer: ReturnType<typeof setTimeout> | null = null;

  const flush = () => {
    if (frame !== null && typeof cancelAnimationFrame === 'function') cancelAnimationFrame(frame);
    if (flushTimer !== null) clearTimeout(flushTimer);
    frame = null;
    flushTimer = null;
    if (buffer.length === 0) return;
    const b = buffer;
    buffer = [];
    o.onEvents(b);
  };
  const scheduleFlush = () => {
    if (frame !== null || flushTimer !== null) return;
    if (typeof requestAnimationFrame === 'function') frame = requestAnimationFrame(flush);
    // rAF does not fire in background tabs; the timer keeps data flowing.
    flushTimer = setTimeout(flush, 250);
  };

  const setState = (s: StreamState) => o.onState?.(s);

  const connect = () => {
    if (stopped) return;
    setState(attempts === 0 ? 'connecting' : 'reconnecting');
    const path = `/api/runs/${encodeURIComponent(o.runId)}/ws?after=${o.getLastSeq()}`;
    let s: SocketLike;
    try {
      s = factory(wsUrl(path, o.baseUrl));
    } catch {
      retry();
      return;
    }
    sock = s;
    s.onopen = () => {
      attempts = 0;
      setState('live');
    };
    s.onmessage = (ev) => {
      const text = typeof ev.data === 'string' ? ev.data : String(ev.data);
      try {
        const v = JSON.parse(text) as RunEvent | RunEvent[];
        if (Array.isArray(v)) buffer.push(...v);
        else buffer.push(v);
      } catch {
        return; // not an event; ignore
      }
      scheduleFlush();
    };
    s.onerror = () => {
      /* onclose follows and decides */
    };
    s.onclose = (ev) => {
      if (sock === s) sock = null;
      flush();
      if (stopped) return;
      if (ev.code === 1000 && o.isDone()) {
        stopped = true;
        setState('closed');
        return;
      }
      retry();
    };
  };

  const retry = () => {
    if (stopped) return;
    attempts++;
    setState('reconnecting');
    const delay = Math.min(maxDelay, baseDelay * 2 ** Math.min(attempts - 1, 6));
    retryTimer = setTimeout(async () => {
      retryTimer = null;
      if (stopped) return;
      // After repeated socket failures, catch up over HTTP in the meantime.
      if (attempts >= 2 && o.fetchEvents) {
        try {
          const evs = await o.fetchEvents(o.getLastSeq());
          if (stopped) return;
          if (evs.length) {
            buffer.push(...evs);
            flush();
          }
          if (o.isDone()) {
            stopped = true;
            setState('closed');
            return;
          }
        } catch {
          // server still unreachable; keep trying the socket
        }
      }
      connect();
    }, delay);
  };

  connect();

  return {
    close: () => {
      stopped = true;
      if (retryTimer !== null) clearTimeout(retryTimer);
      flush();
      const s = sock;
      sock = null;
      if (s) {
        s.onclose = null;
        s.onmessage = null;
        s.close(1000);
      }
    },
  };
}
