import type { Graph } from '../graph/types';
import type {
  AppConfig,
  Approval,
  ForkRequest,
  Problem,
  Run,
  RunEvent,
  ValidateResult,
  Workflow,
  WorkflowSummary,
  WorkflowVersion,
  YamlConversion,
  YamlPositions,
  YamlSave,
  YamlValidateResult,
} from './types';

/**
 * `network`: the server could not be reached or did not answer like the
 * Switchyard API (e.g. a static file server returning HTML).
 */
export type ApiErrorKind = 'network' | 'http';

export class ApiError extends Error {
  readonly kind: ApiErrorKind;
  readonly status: number;
  readonly code: string;
  readonly problems: Problem[];
  /** The whole answer body (e.g. a YAML save conflict's yours/disk/base). */
  readonly body: unknown;
  constructor(kind: ApiErrorKind, status: number, code: string, message: string, problems: Problem[] = [], body: unknown = undefined) {
    super(message);
    this.body = body;
    this.name = 'ApiError';
    this.kind = kind;
    this.status = status;
    this.code = code;
    this.problems = problems;
  }
  get unreachable(): boolean {
    return this.kind === 'network';
  }
  get unauthorized(): boolean {
    return this.status === 401 || this.code === 'unauthorized';
  }
  get conflict(): boolean {
    return this.status === 409 || this.code === 'conflict';
  }
}

export type ApiListener = {
  onReachable?: () => void;
  onUnreachable?: (err: ApiError) => void;
  onUnauthorized?: () => void;
};

let listener: ApiListener = {};
/** Origin prefix for requests; empty in the browser (same origin). Tests set it. */
let base = '';
export function setApiBase(url: string): void {
  base = url.replace(/\/+$/, '');
}

/** The app store registers here to learn about connectivity and auth. */
export function setApiListener(l: ApiListener): void {
  listener = l;
}

type Body = Record<string, unknown> | undefined;

async function request<T>(method: string, path: string, body?: Body, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(base + path, {
      method,
      headers: body !== undefined ? { 'Content-Type': 'application/json', Accept: 'application/json' } : { Accept: 'application/json' },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      credentials: 'same-origin',
      signal,
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    const err = new ApiError('network', 0, 'unreachable', 'Server unreachable');
    listener.onUnreachable?.(err);
    throw err;
  }
  const text = await res.text();
  const ctype = res.headers.get('content-type') ?? '';
  let parsed: unknown = undefined;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  const looksJson = ctype.includes('json') || parsed !== undefined || text === '';
  if (!looksJson || (res.status >= 500 && parsed === undefined) || res.status === 502 || res.status === 504) {
    // Something answered, but not the API (static server, proxy error page).
    const err = new ApiError('network', res.status, 'unreachable', `Server unreachable (HTTP ${res.status} from ${path})`);
    listener.onUnreachable?.(err);
    throw err;
  }
  listener.onReachable?.();
  if (!res.ok) {
    const e = (parsed as { error?: { code?: string; message?: string; problems?: Problem[] } } | undefined)?.error;
    const err = new ApiError(
      'http',
      res.status,
      e?.code ?? `http_${res.status}`,
      e?.message ?? `Request failed (HTTP ${res.status})`,
      Array.isArray(e?.problems) ? e!.problems : [],
      parsed,
    );
    if (err.unauthorized) listener.onUnauthorized?.();
    throw err;
  }
  return parsed as T;
}

const enc = encodeURIComponent;

const eventsPage = 1000;

export const api = {
  listWorkflows: () => request<WorkflowSummary[]>('GET', '/api/workflows'),
  getWorkflow: (id: string) => request<Workflow>('GET', `/api/workflows/${enc(id)}`),
  createWorkflow: (w: { name: string; description: string; graph: Graph }) =>
    request<Workflow>('POST', '/api/workflows', w),
  updateWorkflow: (id: string, w: { name: string; description: string; graph: Graph; version: number }) =>
    request<Workflow>('PUT', `/api/workflows/${enc(id)}`, w),
  saveYaml: (id: string, body: YamlSave) => request<Workflow>('PUT', `/api/workflows/${enc(id)}`, body as Body),
  createYaml: (path: string, source: string) => request<Workflow>('POST', '/api/workflows/yaml', { path, source }),
  validateYaml: (source: string, path?: string, signal?: AbortSignal) =>
    request<YamlValidateResult>('POST', '/api/yaml/validate', path ? { source, path } : { source }, signal),
  convertToYaml: (id: string) => request<YamlConversion>('POST', `/api/workflows/${enc(id)}/yaml`, {}),
  getYamlPositions: (id: string) => request<YamlPositions>('GET', `/api/workflows/${enc(id)}/positions`),
  putYamlPositions: (id: string, positions: YamlPositions['positions']) =>
    request<YamlPositions>('PUT', `/api/workflows/${enc(id)}/positions`, { positions }),
  deleteWorkflow: (id: string) => request<unknown>('DELETE', `/api/workflows/${enc(id)}`),
  listVersions: (id: string) => request<WorkflowVersion[]>('GET', `/api/workflows/${enc(id)}/versions`),
  getVersion: (id: string, v: number) => request<WorkflowVersion>('GET', `/api/workflows/${enc(id)}/versions/${v}`),
  normalize: (graph: unknown) => request<{ graph: Graph; problems: Problem[] | string[] }>('POST', '/api/normalize', { graph }),
  validate: (graph: Graph, signal?: AbortSignal) => request<ValidateResult>('POST', '/api/validate', { graph }, signal),
  createRun: (r: { workflowId?: string; graph?: Graph; input?: string }) => request<Run>('POST', '/api/runs', r),
  listRuns: (q: { workflowId?: string; status?: string; limit?: number; before?: string }) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== '') p.set(k, String(v));
    const qs = p.toString();
    return request<Run[]>('GET', `/api/runs${qs ? `?${qs}` : ''}`);
  },
  getRun: (id: string) => request<Run>('GET', `/api/runs/${enc(id)}`),
  /** Every stored event after `after`, read page by page (the server sends at most `eventsPage` at once). */
  getEvents: async (id: string, after: number): Promise<RunEvent[]> => {
    const all: RunEvent[] = [];
    for (;;) {
      const page = await request<RunEvent[]>('GET', `/api/runs/${enc(id)}/events?after=${after}&limit=${eventsPage}`);
      all.push(...page);
      const last = page[page.length - 1];
      if (page.length < eventsPage || !last) return all;
      after = last.seq;
    }
  },
  /** "Run from here": a new run from nodeId reusing this run's upstream results (201 with the new run). */
  forkRun: (id: string, body: ForkRequest) => request<Run>('POST', `/api/runs/${enc(id)}/fork`, body),
  approvals: () => request<Approval[]>('GET', '/api/approvals'),
  decide: (id: string, nodeId: string, decision: 'approve' | 'reject', note: string) =>
    request<Run>('POST', `/api/runs/${enc(id)}/approvals/${enc(nodeId)}`, { decision, note }),
  cancelRun: (id: string) => request<unknown>('POST', `/api/runs/${enc(id)}/cancel`, {}),
  config: () => request<AppConfig>('GET', '/api/config'),
  login,
};

/** POST /login sets a session cookie; any 2xx counts, whatever the body. */
async function login(token: string): Promise<void> {
  let res: Response;
  try {
    res = await fetch(base + '/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ token }),
      credentials: 'same-origin',
    });
  } catch {
    throw new ApiError('network', 0, 'unreachable', 'Server unreachable');
  }
  if (res.ok) return;
  let msg = res.status === 401 ? 'That token was not accepted.' : `Sign-in failed (HTTP ${res.status})`;
  try {
    const body = (await res.json()) as { error?: { message?: string } };
    if (body.error?.message) msg = body.error.message;
  } catch {
    // keep the generic message
  }
  throw new ApiError('http', res.status, res.status === 401 ? 'unauthorized' : `http_${res.status}`, msg);
}

export function errorMessage(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}
