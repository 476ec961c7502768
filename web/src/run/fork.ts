// "Run from here" (fork a run from a node): what the UI needs to know
// before it asks the server. The server decides (engine/fork.go); this
// mirrors its rule so the dialog can say beforehand which stored outputs
// the new run will reuse, and lets the person edit one of them.
import type { ForkRequest, Run } from '../api/types';
import { nodeName } from '../graph/checks';
import { SUBAGENT_HANDLE } from '../graph/types';

type N = { id: string; type?: string; data: Record<string, unknown> };
type E = { source: string; target: string; sourceHandle?: string | null };

/** Statuses of a run that may be forked (the engine's RunStatus.Terminal). */
const FORKABLE = new Set(['completed', 'failed', 'cancelled']);

/** Whether a run in this status can be run from a node, and if not, why (for the disabled button's title and text). */
export function forkBlocker(status: string): string {
  if (FORKABLE.has(status)) return '';
  switch (status) {
    case 'running':
    case 'pending':
      return 'The run is still running: Run from here works once it has ended (completed, failed or cancelled).';
    case 'paused':
      return 'The run is paused, waiting for approval: answer it or cancel the run first.';
    case 'interrupted':
      return 'The run was interrupted and resumes when the server restarts: Run from here works once it has ended.';
    default:
      return 'Run from here works on a run that has ended (completed, failed or cancelled).';
  }
}

/**
 * The nodes from which node can be reached along execution edges (subagent
 * edges are calls, not steps), leaving out node itself and every node
 * reachable from it: in a loop through node those run again after it. The
 * engine's upstreamOf, on the run's graph.
 */
export function upstreamOf(edges: readonly E[], node: string): Set<string> {
  const exec = edges.filter((e) => e.sourceHandle !== SUBAGENT_HANDLE);
  const down = new Set<string>([node]);
  const stack = [node];
  while (stack.length > 0) {
    const v = stack.pop()!;
    for (const e of exec) {
      if (e.source === v && !down.has(e.target)) {
        down.add(e.target);
        stack.push(e.target);
      }
    }
  }
  const up = new Set<string>();
  stack.push(node);
  while (stack.length > 0) {
    const v = stack.pop()!;
    for (const e of exec) {
      if (e.target === v && !up.has(e.source) && !down.has(e.source)) {
        up.add(e.source);
        stack.push(e.source);
      }
    }
  }
  return up;
}

/** An upstream node whose stored output the fork reuses. */
export type ReusedNode = { id: string; name: string; output: string };

/**
 * The upstream nodes that completed in the run, in the graph's order:
 * the fork takes their stored outputs instead of running them. Upstream
 * nodes that did not complete (skipped, failed) run again if reached.
 */
export function reusedNodes(run: Pick<Run, 'outputs' | 'nodes'>, nodes: readonly N[], edges: readonly E[], from: string): ReusedNode[] {
  const up = upstreamOf(edges, from);
  const states = new Map((run.nodes ?? []).map((s) => [s.nodeId, s]));
  const out: ReusedNode[] = [];
  for (const n of nodes) {
    if (!up.has(n.id)) continue;
    // outputs holds exactly the completed nodes' outputs.
    const st = states.get(n.id);
    const output = run.outputs?.[n.id] ?? (st?.status === 'completed' ? (st.output ?? '') : undefined);
    if (output === undefined) continue;
    out.push({ id: n.id, name: nodeName(n, n.id), output });
  }
  return out;
}

/**
 * The fork request: run from `from`, with the one edited output pinned
 * when its text differs from the stored one (an unchanged text is simply
 * reused, not pinned).
 */
export function forkRequest(from: string, reused: readonly ReusedNode[], edit: { id: string; text: string } | null): ForkRequest {
  const req: ForkRequest = { nodeId: from };
  if (!edit) return req;
  const orig = reused.find((r) => r.id === edit.id);
  if (orig && orig.output !== edit.text) req.pinned = { [edit.id]: edit.text };
  return req;
}

/** A forked run's first event (run_forked): its parent, the node it ran from and what it reused. */
export type ForkInfo = {
  parentRunId: string;
  fromNode: string;
  /** Node id → whether its reused output was edited (pinned) rather than the parent's. */
  reused: Readonly<Record<string, { edited: boolean }>>;
};

/** Reads a run_forked event's data; null when it is not one. */
export function parseForkData(data: Record<string, unknown> | null | undefined): ForkInfo | null {
  if (!data || typeof data.parentRunId !== 'string' || typeof data.fromNode !== 'string') return null;
  const reused: Record<string, { edited: boolean }> = {};
  const r = data.reused;
  if (r && typeof r === 'object') {
    for (const [id, v] of Object.entries(r as Record<string, unknown>)) {
      reused[id] = { edited: !!v && typeof v === 'object' && (v as { edited?: unknown }).edited === true };
    }
  }
  return { parentRunId: data.parentRunId, fromNode: data.fromNode, reused };
}
