// An agent node's tool loop as the run log tells it: the model's turns
// (llm_turn), the calls each turn made (tool_call) and their results
// (tool_result), with reviewers' decisions (input_received) and the output
// a Bash call streams (output). Kept flat per node, in event order, so the
// reducer can update one call in place; transcriptTree() nests it for
// display (a subagent's turns under the call that started it).
import type { RunEvent } from '../api/types';

export type ToolCallStatus = 'running' | 'waiting' | 'ok' | 'error' | 'denied' | 'stopped';

export type TranscriptTurn = {
  kind: 'turn';
  seq: number;
  session: string;
  turn: number;
  /** The subagent call (its session) this turn belongs to; null at the top. */
  parent: string | null;
  text: string;
  toolCalls: number;
};

export type ToolDecision = { decision: 'approve' | 'reject'; note: string };

export type TranscriptCall = {
  kind: 'call';
  seq: number;
  /** `<session>/<callId>`: unique in the node, and the id a subagent it starts runs under. */
  key: string;
  session: string;
  turn: number;
  callId: string;
  tool: string;
  /** One-line summary ("Read calc.sh", "Bash: ./test.sh"). */
  summary: string;
  /** The arguments as logged (a JSON object; long strings cut). */
  args: unknown;
  parent: string | null;
  status: ToolCallStatus;
  /** The text the model saw; null until the result. */
  result: string | null;
  /** Size of the result before cutting. */
  bytes: number | null;
  cut: boolean;
  durationMs: number | null;
  /** Output a running Bash call streamed so far (its tail). */
  live: string;
  decision: ToolDecision | null;
};

export type TranscriptItem = TranscriptTurn | TranscriptCall;

export type Transcript = {
  items: readonly TranscriptItem[];
  /** Call key → index in items. */
  index: Readonly<Record<string, number>>;
};

/** Streamed Bash output kept per call while it runs (its tail). */
export const LIVE_LIMIT = 16 * 1024;

export function emptyTranscript(): Transcript {
  return { items: [], index: {} };
}

const TOOL_EVENTS = new Set(['llm_turn', 'tool_call', 'tool_result']);

/** Whether an event belongs in a transcript (besides the approvals and output it annotates). */
export function isToolEvent(type: string): boolean {
  return TOOL_EVENTS.has(type);
}

function rec(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
function s(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '';
}
function n(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** The subagent call a tool event's loop serves (data.parentCallId), or null. */
export function parentCallOf(e: RunEvent): string | null {
  return s(e.data?.parentCallId) || null;
}

export function callKey(session: string, callId: string): string {
  return `${session}/${callId}`;
}

/**
 * A transcript being changed by one batch of events: the first change
 * copies it, later ones reuse the copy (the previous one stays intact).
 */
export class TranscriptDraft {
  private items: TranscriptItem[];
  private index: Record<string, number>;
  private copied = false;
  constructor(private readonly base: Transcript) {
    this.items = base.items as TranscriptItem[];
    this.index = base.index as Record<string, number>;
  }

  private own() {
    if (this.copied) return;
    this.items = this.items.slice();
    this.index = { ...this.index };
    this.copied = true;
  }

  result(): Transcript {
    return this.copied ? { items: this.items, index: this.index } : this.base;
  }

  private update(i: number, patch: Partial<TranscriptCall>) {
    const it = this.items[i];
    if (!it || it.kind !== 'call') return;
    this.own();
    this.items[i] = { ...it, ...patch };
  }

  /** Applies a tool event, a tool wait, a reviewer's decision or Bash output. */
  apply(e: RunEvent): void {
    const d = rec(e.data);
    switch (e.type) {
      case 'llm_turn':
        this.own();
        this.items.push({
          kind: 'turn',
          seq: e.seq,
          session: s(d.session),
          turn: n(d.turn) ?? 0,
          parent: parentCallOf(e),
          text: e.content ?? '',
          toolCalls: n(d.toolCalls) ?? 0,
        });
        return;
      case 'tool_call': {
        const session = s(d.session);
        const callId = s(d.callId);
        const key = callKey(session, callId);
        const existing = this.index[key];
        if (existing !== undefined) return; // logged twice (a resumed loop): keep the first
        this.own();
        this.index[key] = this.items.length;
        this.items.push({
          kind: 'call',
          seq: e.seq,
          key,
          session,
          turn: n(d.turn) ?? 0,
          callId,
          tool: s(d.tool),
          summary: e.content || s(d.tool),
          args: d.arguments ?? null,
          parent: parentCallOf(e),
          status: 'running',
          result: null,
          bytes: null,
          cut: false,
          durationMs: null,
          live: '',
          decision: null,
        });
        return;
      }
      case 'tool_result': {
        const i = this.index[callKey(s(d.session), s(d.callId))];
        if (i === undefined) return;
        const status: ToolCallStatus = d.denied === true ? 'denied' : d.ok === false ? 'error' : 'ok';
        this.update(i, {
          status,
          result: e.content ?? '',
          bytes: n(d.bytes),
          cut: d.cut === true,
          durationMs: n(d.durationMs),
          live: '',
        });
        return;
      }
      case 'wait_input': {
        const tool = rec(d.tool);
        const callId = s(tool.callId);
        if (!callId) return;
        const i = this.findTopCall(callId);
        if (i !== undefined) this.update(i, { status: 'waiting' });
        return;
      }
      case 'input_received': {
        const callId = s(d.callId);
        if (!callId) return;
        const session = s(d.session);
        const i = session ? this.index[callKey(session, callId)] : this.findTopCall(callId);
        if (i === undefined) return;
        const it = this.items[i] as TranscriptCall;
        const decision: ToolDecision = { decision: s(d.decision) === 'approve' ? 'approve' : 'reject', note: s(d.note) };
        this.update(i, { decision, status: it.status === 'waiting' ? 'running' : it.status });
        return;
      }
      case 'output':
        this.attachOutput(e);
        return;
    }
  }

  /**
   * Adds streamed output to the node's running Bash call: output events
   * carry no call id, so it is the newest running one. Returns whether
   * there was one.
   */
  attachOutput(e: RunEvent): boolean {
    for (let i = this.items.length - 1; i >= 0; i--) {
      const it = this.items[i]!;
      if (it.kind === 'call' && it.status === 'running' && it.tool === 'Bash') {
        let live = it.live + (e.content ?? '') + ((e.content ?? '').endsWith('\n') ? '' : '\n');
        if (live.length > LIVE_LIMIT) live = live.slice(live.length - LIVE_LIMIT);
        this.update(i, { live });
        return true;
      }
    }
    return false;
  }

  /** Calls that never got a result once their node or run stopped. */
  stopOpen(): void {
    for (let i = 0; i < this.items.length; i++) {
      const it = this.items[i]!;
      if (it.kind === 'call' && (it.status === 'running' || it.status === 'waiting')) this.update(i, { status: 'stopped' });
    }
  }

  private findTopCall(callId: string): number | undefined {
    for (let i = this.items.length - 1; i >= 0; i--) {
      const it = this.items[i]!;
      if (it.kind === 'call' && it.callId === callId && it.parent === null) return i;
    }
    return undefined;
  }
}

// ---- Display tree ----

export type CallNode = { call: TranscriptCall; children: TurnNode[] };
/** A model turn and its calls; `turn` is null when the turn's own event is missing. */
export type TurnNode = { key: string; session: string; turnNo: number; turn: TranscriptTurn | null; calls: CallNode[] };

/**
 * Nests a transcript: turns in order, each with its calls; a subagent
 * call's own turns (events whose parentCallId is the call's key) under it.
 */
export function transcriptTree(t: Transcript): TurnNode[] {
  const byParent = new Map<string, TurnNode[]>();
  const turnOf = new Map<string, TurnNode>();
  const get = (parent: string | null, session: string, turnNo: number): TurnNode => {
    const k = `${parent ?? ''}\u0000${session}\u0000${turnNo}`;
    let tn = turnOf.get(k);
    if (!tn) {
      tn = { key: k, session, turnNo, turn: null, calls: [] };
      turnOf.set(k, tn);
      const list = byParent.get(parent ?? '') ?? [];
      list.push(tn);
      byParent.set(parent ?? '', list);
    }
    return tn;
  };
  const callNodes: CallNode[] = [];
  for (const it of t.items) {
    const tn = get(it.parent, it.session, it.turn);
    if (it.kind === 'turn') tn.turn = it;
    else {
      const cn: CallNode = { call: it, children: [] };
      tn.calls.push(cn);
      callNodes.push(cn);
    }
  }
  for (const cn of callNodes) cn.children = byParent.get(cn.call.key) ?? [];
  const top = byParent.get('') ?? [];
  // Turns whose parent call is not in this transcript are shown at the top.
  const keys = new Set(callNodes.map((c) => c.call.key));
  for (const [parent, list] of byParent) if (parent !== '' && !keys.has(parent)) top.push(...list);
  return top;
}

/** Top-level sessions in a transcript (visits, loop iterations), in order of appearance. */
export function sessionsOf(tree: readonly TurnNode[]): string[] {
  const out: string[] = [];
  for (const t of tree) if (!out.includes(t.session)) out.push(t.session);
  return out;
}

/** "Visit 2", "Visit 1 · iteration 3" for a session id "2", "1/i3". */
export function sessionLabel(session: string): string {
  const [visit, ...rest] = session.split('/');
  const parts = [`Visit ${visit || '?'}`];
  for (const r of rest) parts.push(/^i\d+$/.test(r) ? `iteration ${r.slice(1)}` : r);
  return parts.join(' · ');
}

export type ToolName = { kind: 'builtin' | 'mcp' | 'subagent'; label: string; server?: string };

/** A tool's display name: MCP tools "server · tool", subagents their agent name. */
export function toolName(tool: string): ToolName {
  const mcp = /^mcp__(.+?)__(.+)$/.exec(tool);
  if (mcp) return { kind: 'mcp', label: mcp[2]!, server: mcp[1]! };
  const sub = /^subagent_(.+)_([^_]+)$/.exec(tool);
  if (sub) return { kind: 'subagent', label: sub[1]!.replace(/_/g, ' ') };
  return { kind: 'builtin', label: tool };
}

/** "840 B", "1.2 KB", "3.4 MB". */
export function fmtBytes(b: number): string {
  if (b < 1024) return `${b} B`;
  if (b < 1024 * 1024) return `${(b / 1024).toFixed(b < 10 * 1024 ? 1 : 0)} KB`;
  return `${(b / (1024 * 1024)).toFixed(1)} MB`;
}

/** Arguments as indented JSON; a string (arguments that were not JSON) as it is. */
export function prettyArgs(args: unknown): string {
  if (typeof args === 'string') return args;
  if (args === undefined || args === null) return '{}';
  try {
    return JSON.stringify(args, null, 2);
  } catch {
    return String(args);
  }
}

export type DiffLine = { kind: 'add' | 'del' | 'hunk' | 'meta' | 'ctx'; text: string };

/**
 * Classifies the lines of a unified diff for highlighting. File headers
 * (---, +++) count only before a hunk: inside one, "--- x" is a removed
 * line "-- x".
 */
export function diffLines(diff: string): DiffLine[] {
  const lines = diff.replace(/\n$/, '').split('\n');
  let inHunk = false;
  return lines.map((text): DiffLine => {
    if (text.startsWith('diff ')) {
      inHunk = false;
      return { kind: 'meta', text };
    }
    if (text.startsWith('@@')) {
      inHunk = true;
      return { kind: 'hunk', text };
    }
    if (!inHunk) return { kind: text.startsWith('+++') || text.startsWith('---') || text.startsWith('index ') ? 'meta' : 'ctx', text };
    if (text.startsWith('+')) return { kind: 'add', text };
    if (text.startsWith('-')) return { kind: 'del', text };
    if (text.startsWith('\\')) return { kind: 'meta', text };
    return { kind: 'ctx', text };
  });
}
