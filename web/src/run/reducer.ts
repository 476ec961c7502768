import type { RunEvent, SubagentCallInfo } from '../api/types';
import { isTerminal } from '../api/types';
import { parseForkData, type ForkInfo } from './fork';
import { emptyTranscript, fmtBytes, parentCallOf, TranscriptDraft, type Transcript } from './transcript';

export type NodeRunStatus = 'idle' | 'running' | 'completed' | 'failed' | 'skipped' | 'waiting' | 'stopped';

export type NodeRunState = {
  status: NodeRunStatus;
  /** The prompt the node sent (start_prompt). */
  prompt: string;
  /** Model text: llm_delta chunks appended live, replaced by llm_response. */
  text: string;
  /** step_end data.output, when given. */
  output: string | null;
  errors: string[];
  warnings: string[];
  checks: string[];
  /** Subagent calls into this node that have not ended. */
  activeCalls: number;
  startedAt: string | null;
  endedAt: string | null;
  /** Visits that started (a revise loop runs a node more than once). */
  visits: number;
  /** Duration of the last visit that ended (step_end data.durationMs). */
  durationMs: number | null;
  /** Total duration over every visit that ended. */
  totalMs: number;
  /** Tokens used by the node's model calls (llm_response data.usage), summed. */
  tokens: number;
  /** Output handles the node fired, over all visits ('' = its default output). */
  fired: readonly string[];
  /** Tool calls the node's agent loop made (its subagents' included). */
  toolCalls: number;
  /** The tool call the node waits on a reviewer for, while it does. */
  waitTool: WaitTool | null;
  /** Why the node was skipped (step_end data.reason: a false when:, a trigger_rule, a branch not taken). */
  skipReason: string | null;
  /** The note of the last rejection of this (approval) node, until it is approved: shown when it waits again. */
  lastRejection: string | null;
  /** A forked run's node that took its parent run's result instead of running (step_start data.reused; its latest visit). */
  reused: boolean;
};

export type WaitTool = { callId: string; tool: string; prompt: string };

export type LogLine = {
  /** Seq of the event that opened the line; stable React key. */
  seq: number;
  /** Seq of the newest event merged into this line. */
  lastSeq: number;
  nodeId: string;
  type: string;
  content: string;
  timestamp: string;
  /** Nesting depth for subagent activity (0 = top level). */
  depth: number;
  streaming: boolean;
  status?: string;
  /** The person's note on an approval decision (input_received data.note). */
  note?: string;
  /** Tool events: "ok · 12 ms · 1.2 KB" and the like. */
  meta?: string;
};

export type SubagentCall = {
  callId: string;
  parentCallId: string | null;
  parentNodeId: string;
  subagentNodeId: string;
  name: string;
  depth: number;
  status: 'running' | 'completed' | 'failed';
  message: string;
  result: string;
  startSeq: number;
};

export type RunLog = {
  lastSeq: number;
  runStatus: string | null;
  nodes: Readonly<Record<string, NodeRunState>>;
  lines: readonly LogLine[];
  calls: Readonly<Record<string, SubagentCall>>;
  callOrder: readonly string[];
  /** nodeId → index in lines of its open streaming line. */
  openStream: Readonly<Record<string, number>>;
  /** nodeId → depth of the subagent call it is serving. */
  callDepth: Readonly<Record<string, number>>;
  /** nodeId → its agent loop's turns and tool calls. */
  transcripts: Readonly<Record<string, Transcript>>;
  /** A forked run's parent, fork point and reused nodes (its run_forked event). */
  fork: ForkInfo | null;
};

export const SYSTEM_NODE = 'system';

export function emptyRunLog(): RunLog {
  return { lastSeq: 0, runStatus: null, nodes: {}, lines: [], calls: {}, callOrder: [], openStream: {}, callDepth: {}, transcripts: {}, fork: null };
}

export function emptyNodeState(): NodeRunState {
  return {
    status: 'idle',
    prompt: '',
    text: '',
    output: null,
    errors: [],
    warnings: [],
    checks: [],
    activeCalls: 0,
    startedAt: null,
    endedAt: null,
    visits: 0,
    durationMs: null,
    totalMs: 0,
    tokens: 0,
    fired: [],
    toolCalls: 0,
    waitTool: null,
    skipReason: null,
    lastRejection: null,
    reused: false,
  };
}

const IDLE = Object.freeze(emptyNodeState());
export function idleState(): NodeRunState {
  return IDLE;
}

export function parseCallInfo(content: string): SubagentCallInfo | null {
  try {
    const v = JSON.parse(content) as Partial<SubagentCallInfo>;
    if (typeof v !== 'object' || v === null || typeof v.callId !== 'string') return null;
    return {
      parentNodeId: String(v.parentNodeId ?? ''),
      subagentNodeId: String(v.subagentNodeId ?? ''),
      subagentName: typeof v.subagentName === 'string' ? v.subagentName : undefined,
      callId: v.callId,
      parentCallId: typeof v.parentCallId === 'string' && v.parentCallId !== '' ? v.parentCallId : undefined,
      depth: typeof v.depth === 'number' ? v.depth : 1,
      message: typeof v.message === 'string' ? v.message : undefined,
    };
  } catch {
    return null;
  }
}

function stepStatus(e: RunEvent): NodeRunStatus {
  const s = e.data?.status;
  // A node interrupted by Cancel ends as failed with error "cancelled"; it
  // did not fail, the run was stopped.
  if (s === 'failed' && (e.content === 'cancelled' || e.data?.error === 'cancelled')) return 'stopped';
  return s === 'failed' ? 'failed' : s === 'skipped' ? 'skipped' : 'completed';
}

function dataNumber(data: RunEvent['data'], key: string): number | null {
  const v = data?.[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** Total tokens of an llm_response (data.usage.totalTokens, or its parts). */
export function usageTokens(data: RunEvent['data']): number {
  const u = data?.['usage'];
  if (typeof u !== 'object' || u === null) return 0;
  const r = u as Record<string, unknown>;
  const n = (k: string) => (typeof r[k] === 'number' && Number.isFinite(r[k]) ? (r[k] as number) : 0);
  return n('totalTokens') || n('promptTokens') + n('completionTokens');
}

/** A tool_result's facts for its log line: "ok · 12 ms · 1.2 KB · cut". */
export function resultMeta(data: RunEvent['data']): string {
  const parts = [data?.denied === true ? 'denied' : data?.ok === false ? 'error' : 'ok'];
  const ms = dataNumber(data, 'durationMs');
  if (ms !== null) parts.push(fmtDuration(ms));
  const b = dataNumber(data, 'bytes');
  if (b !== null) parts.push(fmtBytes(b));
  if (data?.cut === true) parts.push('cut');
  return parts.join(' · ');
}

function dataString(data: RunEvent['data'], key: string): string | null {
  const v = data?.[key];
  if (v === undefined || v === null) return null;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * Applies a batch of events. Events at or below lastSeq are dropped, so
 * replays after a reconnect never duplicate lines. Only node states and log
 * lines that change get new objects: canvas nodes subscribe per node id and
 * re-render only when their own state changes.
 */
export function applyEvents(prev: RunLog, batch: readonly RunEvent[]): RunLog {
  const events = batch.filter((e) => typeof e.seq === 'number' && e.seq > prev.lastSeq);
  if (events.length === 0) return prev;
  events.sort((a, b) => a.seq - b.seq);

  let lastSeq = prev.lastSeq;
  let runStatus = prev.runStatus;
  let fork = prev.fork;
  const nodes: Record<string, NodeRunState> = { ...prev.nodes };
  const lines: LogLine[] = prev.lines.slice();
  const calls: Record<string, SubagentCall> = { ...prev.calls };
  const callOrder = prev.callOrder.slice();
  const openStream: Record<string, number> = { ...prev.openStream };
  const callDepth: Record<string, number> = { ...prev.callDepth };
  const fresh = new Set<string>(); // node states already copied in this batch
  const drafts = new Map<string, TranscriptDraft>();
  const transcript = (id: string): TranscriptDraft => {
    let d = drafts.get(id);
    if (!d) {
      d = new TranscriptDraft(prev.transcripts[id] ?? emptyTranscript());
      drafts.set(id, d);
    }
    return d;
  };
  /** Depth of the agent loop an event comes from: a subagent's is its call's. */
  const loopDepth = (e: RunEvent): number => {
    const parent = parentCallOf(e);
    if (parent) return calls[parent]?.depth ?? 1;
    return callDepth[e.nodeId] ?? 0;
  };

  const node = (id: string): NodeRunState => {
    let s = nodes[id];
    if (!s) {
      s = emptyNodeState();
      nodes[id] = s;
      fresh.add(id);
    } else if (!fresh.has(id)) {
      s = { ...s, errors: s.errors.slice(), warnings: s.warnings.slice(), checks: s.checks.slice() };
      nodes[id] = s;
      fresh.add(id);
    }
    return s;
  };
  const push = (e: RunEvent, extra: Partial<LogLine> = {}) => {
    lines.push({
      seq: e.seq,
      lastSeq: e.seq,
      nodeId: e.nodeId,
      type: e.type,
      content: e.content ?? '',
      timestamp: e.timestamp,
      depth: callDepth[e.nodeId] ?? 0,
      streaming: false,
      ...extra,
    });
  };

  for (const e of events) {
    if (e.seq <= lastSeq) continue; // duplicate inside one batch
    lastSeq = e.seq;
    const isNode = e.nodeId !== SYSTEM_NODE && e.nodeId !== '';

    if (e.type === 'llm_delta') {
      if (isNode) {
        const s = node(e.nodeId);
        s.text += e.content ?? '';
        if (s.status === 'idle') s.status = 'running';
      }
      const open = openStream[e.nodeId];
      const line = open !== undefined ? lines[open] : undefined;
      if (line) {
        lines[open!] = { ...line, content: line.content + (e.content ?? ''), lastSeq: e.seq };
      } else {
        push(e, { streaming: true });
        openStream[e.nodeId] = lines.length - 1;
      }
      continue;
    }

    // Any other event from a node ends its open stream.
    const open = openStream[e.nodeId];
    if (open !== undefined) {
      delete openStream[e.nodeId];
      const line = lines[open];
      if (e.type === 'llm_response' && line) {
        lines[open] = { ...line, type: 'llm_response', content: e.content ?? line.content, lastSeq: e.seq, streaming: false };
        if (isNode) {
          const s = node(e.nodeId);
          s.text = e.content ?? '';
          s.tokens += usageTokens(e.data);
        }
        continue;
      }
      if (e.type === 'llm_turn' && line) {
        // The streamed text was a turn that called tools: its line becomes the turn's.
        lines[open] = { ...line, type: 'llm_turn', content: e.content ?? line.content, lastSeq: e.seq, streaming: false, meta: turnMeta(e) };
        if (isNode) {
          node(e.nodeId).text = '';
          transcript(e.nodeId).apply(e);
        }
        continue;
      }
      if (line) lines[open] = { ...line, streaming: false };
    }

    switch (e.type) {
      case 'step_start':
        if (isNode) {
          const s = node(e.nodeId);
          s.status = 'running';
          s.text = '';
          s.output = null;
          s.startedAt = e.timestamp;
          s.endedAt = null;
          s.visits = Math.max(s.visits + 1, dataNumber(e.data, 'visit') ?? 0);
          s.waitTool = null;
          s.reused = e.data?.['reused'] === true;
        }
        push(e);
        break;
      case 'run_forked':
        fork = parseForkData(e.data) ?? fork;
        push(e);
        break;
      case 'start_prompt':
        if (isNode) node(e.nodeId).prompt = e.content ?? '';
        push(e);
        break;
      case 'llm_response':
        if (isNode) {
          const s = node(e.nodeId);
          s.text = e.content ?? '';
          s.tokens += usageTokens(e.data);
        }
        push(e);
        break;
      case 'llm_error':
      case 'error':
        if (isNode) node(e.nodeId).errors.push(e.content ?? '');
        push(e);
        break;
      case 'warning':
        if (isNode) node(e.nodeId).warnings.push(e.content ?? '');
        push(e);
        break;
      case 'logic_check':
        if (isNode) node(e.nodeId).checks.push(e.content ?? '');
        push(e);
        break;
      case 'wait_input':
        if (isNode) {
          const s = node(e.nodeId);
          s.status = 'waiting';
          const tool = e.data?.['tool'];
          if (typeof tool === 'object' && tool !== null) {
            const t = tool as Record<string, unknown>;
            s.waitTool = { callId: String(t.callId ?? ''), tool: String(t.tool ?? ''), prompt: e.content ?? '' };
            transcript(e.nodeId).apply(e);
          } else {
            s.waitTool = null;
          }
        }
        push(e);
        break;
      case 'llm_turn':
        if (isNode) {
          node(e.nodeId).text = '';
          transcript(e.nodeId).apply(e);
        }
        push(e, { depth: loopDepth(e), meta: turnMeta(e) });
        break;
      case 'tool_call':
        if (isNode) {
          node(e.nodeId).toolCalls += 1;
          transcript(e.nodeId).apply(e);
        }
        push(e, { depth: loopDepth(e) + 1 });
        break;
      case 'tool_result': {
        if (isNode) transcript(e.nodeId).apply(e);
        const st = e.data?.denied === true ? 'denied' : e.data?.ok === false ? 'error' : 'ok';
        push(e, { depth: loopDepth(e) + 1, status: st, meta: `${String(e.data?.tool ?? '')} · ${resultMeta(e.data)}` });
        break;
      }
      case 'output': {
        // A Bash tool's streamed output goes to its call too, and its log
        // line under the call's (bash nodes have no transcript).
        const known = isNode && (prev.transcripts[e.nodeId] !== undefined || drafts.has(e.nodeId));
        if (known && transcript(e.nodeId).attachOutput(e)) push(e, { depth: (callDepth[e.nodeId] ?? 0) + 1 });
        else push(e);
        break;
      }
      case 'input_received': {
        if (isNode) {
          const s = node(e.nodeId);
          s.status = 'running';
          s.waitTool = null;
          if (e.data?.['callId']) transcript(e.nodeId).apply(e);
          else {
            // The node's own decision (not a tool call's): a rejection's note is shown when it waits again.
            const d = dataString(e.data, 'decision');
            if (d === 'reject') s.lastRejection = dataString(e.data, 'note')?.trim() || '(no note)';
            else if (d === 'approve') s.lastRejection = null;
          }
        }
        // The engine puts a reject note in the text but an approve note
        // only in data; show it either way, once.
        const note = dataString(e.data, 'note')?.trim() ?? '';
        push(e, note && !(e.content ?? '').includes(note) ? { note } : {});
        break;
      }
      case 'step_end': {
        const st = stepStatus(e);
        if (isNode) {
          const s = node(e.nodeId);
          s.status = st;
          s.endedAt = e.timestamp;
          s.waitTool = null;
          // A call still open when its node ends never finished.
          if (prev.transcripts[e.nodeId] !== undefined || drafts.has(e.nodeId)) transcript(e.nodeId).stopOpen();
          const out = dataString(e.data, 'output');
          if (out !== null) s.output = out;
          const err = dataString(e.data, 'error');
          if (err !== null && st === 'failed' && !s.errors.includes(err)) s.errors.push(err);
          const ms = dataNumber(e.data, 'durationMs');
          if (ms !== null) {
            s.durationMs = ms;
            s.totalMs += ms;
          }
          if (st === 'completed') {
            const h = dataString(e.data, 'handle') ?? '';
            if (!s.fired.includes(h)) s.fired = [...s.fired, h];
          }
          s.skipReason = st === 'skipped' ? (dataString(e.data, 'reason') ?? null) : null;
        }
        const reason = st === 'skipped' ? dataString(e.data, 'reason') : null;
        push(e, reason ? { status: st, meta: reason } : { status: st });
        break;
      }
      case 'run_status': {
        runStatus = e.content;
        if (isTerminal(e.content)) {
          for (const [id, idx] of Object.entries(openStream)) {
            const line = lines[idx];
            if (line) lines[idx] = { ...line, streaming: false };
            delete openStream[id];
          }
          // Nodes still marked active when the run ends did not finish.
          for (const [id, s] of Object.entries(nodes)) {
            if (s.status === 'running' || s.status === 'waiting') {
              const n = node(id);
              n.status = e.content === 'failed' ? 'failed' : 'stopped';
              n.waitTool = null;
            }
          }
          for (const id of new Set([...Object.keys(prev.transcripts), ...drafts.keys()])) transcript(id).stopOpen();
        }
        push(e, { status: e.content });
        break;
      }
      case 'subagent_call_start':
      case 'subagent_call_end':
      case 'subagent_call_error': {
        const info = parseCallInfo(e.content);
        if (!info) {
          push(e);
          break;
        }
        const depth = Math.max(1, info.depth);
        if (e.type === 'subagent_call_start') {
          if (!calls[info.callId]) callOrder.push(info.callId);
          calls[info.callId] = {
            callId: info.callId,
            parentCallId: info.parentCallId ?? null,
            parentNodeId: info.parentNodeId,
            subagentNodeId: info.subagentNodeId,
            name: info.subagentName ?? info.subagentNodeId,
            depth,
            status: 'running',
            message: info.message ?? '',
            result: '',
            startSeq: e.seq,
          };
          if (info.subagentNodeId) {
            const s = node(info.subagentNodeId);
            s.activeCalls += 1;
            s.status = 'running';
            if (s.startedAt === null) s.startedAt = e.timestamp;
            callDepth[info.subagentNodeId] = depth;
          }
        } else {
          const failed = e.type === 'subagent_call_error';
          // The subagent's own text stream ends with its call.
          const sub = openStream[info.subagentNodeId];
          if (sub !== undefined) {
            const line = lines[sub];
            if (line) lines[sub] = { ...line, streaming: false };
            delete openStream[info.subagentNodeId];
          }
          // The subagent's own tokens (also in its caller's llm_response).
          if (info.subagentNodeId) node(info.subagentNodeId).tokens += usageTokens(e.data);
          const c = calls[info.callId];
          calls[info.callId] = {
            ...(c ?? {
              callId: info.callId,
              parentCallId: info.parentCallId ?? null,
              parentNodeId: info.parentNodeId,
              subagentNodeId: info.subagentNodeId,
              name: info.subagentName ?? info.subagentNodeId,
              depth,
              message: '',
              startSeq: e.seq,
            }),
            status: failed ? 'failed' : 'completed',
            result: info.message ?? '',
          };
          if (!c) callOrder.push(info.callId);
          if (info.subagentNodeId) {
            const s = node(info.subagentNodeId);
            s.activeCalls = Math.max(0, s.activeCalls - 1);
            if (failed) {
              s.status = 'failed';
              if (info.message) s.errors.push(info.message);
            } else if (s.activeCalls === 0 && s.status !== 'failed') {
              s.status = 'completed';
            }
            if (info.message && !failed) s.output = info.message;
            s.endedAt = e.timestamp;
            if (s.activeCalls === 0) delete callDepth[info.subagentNodeId];
          }
        }
        push(e, { depth, status: e.type.slice('subagent_call_'.length) });
        break;
      }
      default:
        push(e);
    }
  }

  let transcripts = prev.transcripts;
  for (const [id, d] of drafts) {
    const t = d.result();
    if (t === prev.transcripts[id] || (t.items.length === 0 && prev.transcripts[id] === undefined)) continue;
    if (transcripts === prev.transcripts) transcripts = { ...prev.transcripts };
    (transcripts as Record<string, Transcript>)[id] = t;
  }
  return { lastSeq, runStatus, nodes, lines, calls, callOrder, openStream, callDepth, transcripts, fork };
}

function turnMeta(e: RunEvent): string {
  const k = dataNumber(e.data, 'toolCalls') ?? 0;
  return `turn ${dataNumber(e.data, 'turn') ?? '?'} · ${k} tool call${k === 1 ? '' : 's'}`;
}

/** Calls made directly by `nodeId` (not by its subagents), in call order. */
export function topLevelCalls(log: RunLog, nodeId: string): SubagentCall[] {
  return log.callOrder
    .map((id) => log.calls[id]!)
    .filter((c) => c.parentNodeId === nodeId && (c.parentCallId === null || !log.calls[c.parentCallId]));
}

/** Calls nested directly under a call. */
export function childCalls(log: RunLog, callId: string): SubagentCall[] {
  return log.callOrder.map((id) => log.calls[id]!).filter((c) => c.parentCallId === callId);
}

/**
 * Whether an edge carried the run: an execution edge fired when its source
 * completed through that handle (agents and start fire their one output,
 * reported as no handle); a subagent edge when the parent called the
 * subagent.
 */
export function edgeFired(
  log: RunLog,
  e: { source: string; target: string; sourceHandle?: string | null; subagent?: boolean },
): boolean {
  if (e.subagent) {
    return log.callOrder.some((id) => {
      const c = log.calls[id];
      return c !== undefined && c.parentNodeId === e.source && c.subagentNodeId === e.target;
    });
  }
  const fired = log.nodes[e.source]?.fired;
  if (!fired || fired.length === 0) return false;
  const h = e.sourceHandle ?? '';
  return fired.includes(h) || (fired.includes('') && (h === '' || h === 'output'));
}

/** Seconds or minutes, short: "840 ms", "2.4 s", "3 min 5 s". */
export function fmtDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** A node's run facts for its canvas badge: visits, last duration, tool calls, tokens. */
export function nodeMeta(s: NodeRunState | undefined): string {
  if (!s) return '';
  const parts: string[] = [];
  if (s.visits > 1) parts.push(`×${s.visits}`);
  if (s.durationMs !== null) parts.push(fmtDuration(s.durationMs));
  if (s.toolCalls > 0) parts.push(`${s.toolCalls} tool call${s.toolCalls === 1 ? '' : 's'}`);
  if (s.tokens > 0) parts.push(`${s.tokens.toLocaleString('en-US')} tok`);
  return parts.join(' · ');
}
