// Checks the UI makes itself, beside the server's validation: cycles that
// nothing can end, and problem messages in people's words (node names for
// internal ids, conditions counted from 1 as the inspector counts them).
import type { Problem } from '../api/types';
import { SUBAGENT_HANDLE } from './types';

type N = { id: string; type?: string; data: Record<string, unknown> };
type E = { id: string; source: string; target: string; sourceHandle?: string | null };

/** How often one node may run in one run (the engine's MaxVisits default). */
export const VISIT_CAP = 25;

/** A node as people know it: its agent name (or label), else its type and id. */
export function nodeName(n: N | undefined, id: string): string {
  if (!n) return id;
  const name = typeof n.data.agentName === 'string' && n.data.agentName ? n.data.agentName : typeof n.data.label === 'string' && n.data.label && n.data.label !== id ? n.data.label : '';
  if (name) return `“${name}”`;
  const kind = n.type === 'if' ? 'if node' : n.type === 'approval' ? 'approval node' : n.type === 'start' ? 'start node' : n.type === 'yaml' ? 'step' : 'node';
  return `${kind} ${id}`;
}

/** Strongly connected components (Tarjan, iterative) of the exec edges. */
function components(ids: string[], edges: readonly E[]): string[][] {
  const out = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const e of edges) if (out.has(e.source) && out.has(e.target)) out.get(e.source)!.push(e.target);
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const comps: string[][] = [];
  for (const root of ids) {
    if (idx.has(root)) continue;
    const work: Array<[string, number]> = [[root, 0]];
    idx.set(root, index);
    low.set(root, index++);
    stack.push(root);
    onStack.add(root);
    while (work.length) {
      const top = work[work.length - 1]!;
      const [v, i] = top;
      const succ = out.get(v)!;
      if (i < succ.length) {
        top[1] = i + 1;
        const w = succ[i]!;
        if (!idx.has(w)) {
          idx.set(w, index);
          low.set(w, index++);
          stack.push(w);
          onStack.add(w);
          work.push([w, 0]);
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
        continue;
      }
      work.pop();
      if (work.length) {
        const p = work[work.length - 1]![0];
        low.set(p, Math.min(low.get(p)!, low.get(v)!));
      }
      if (low.get(v) === idx.get(v)) {
        const comp: string[] = [];
        for (;;) {
          const w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
          if (w === v) break;
        }
        comps.push(comp.reverse());
      }
    }
  }
  return comps;
}

/**
 * Loops with no way out: a cycle of a drawn graph in which no node can
 * decide to leave it (no if node, no approval node), so every node in it
 * runs until the engine's visit cap ends the run (an agent → agent revise
 * loop without a check). One warning per such loop, on its first node.
 */
export function endlessLoops(nodes: readonly N[], edges: readonly E[]): Problem[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const exec = edges.filter((e) => e.sourceHandle !== SUBAGENT_HANDLE);
  const selfLoops = new Set(exec.filter((e) => e.source === e.target).map((e) => e.source));
  const problems: Problem[] = [];
  for (const comp of components(nodes.map((n) => n.id), exec)) {
    if (comp.length < 2 && !selfLoops.has(comp[0]!)) continue;
    if (comp.some((id) => byId.get(id)?.type === 'if' || byId.get(id)?.type === 'approval')) continue;
    const names = comp.map((id) => nodeName(byId.get(id), id));
    const path = [...names, names[0]].join(' → ');
    problems.push({
      code: 'endless_loop',
      severity: 'warning',
      message: `${path} loops with no if or approval node to leave it: each runs ${VISIT_CAP} times, then the visit cap fails the run. Add an if node (or an approval) to the loop.`,
      nodeId: comp[0]!,
    });
  }
  return problems;
}

/**
 * A server problem's message in the words of the canvas: `edge "e6" (n2 ->
 * n3)` becomes the edge “Writer” → “Critic”, `node "n3"` the node's name,
 * and "condition 2 (handle condition-1)" condition 2 (the inspector counts
 * from 1 too).
 */
export function humanMessage(message: string, nodes: readonly N[], edges: readonly E[]): string {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const edgeById = new Map(edges.map((e) => [e.id, e]));
  return message
    .replace(/edge "([^"]+)"(?: \(([^)]*?) -> ([^)]*?)\))?/g, (_m, id: string, s?: string, t?: string) => {
      const e = edgeById.get(id);
      const src = s ?? e?.source;
      const tgt = t ?? e?.target;
      return src && tgt ? `the edge ${nodeName(byId.get(src), src)} → ${nodeName(byId.get(tgt), tgt)}` : `an edge`;
    })
    .replace(/\b(if |agent |approval |start )?node "([^"]+)"/g, (_m, kind: string | undefined, id: string) => {
      const n = byId.get(id);
      return n ? nodeName(n, id) : `${kind ?? ''}node ${id}`;
    })
    .replace(/ \(handle condition-\d+\)/g, '')
    .replace(/handle "condition-(\d+)"/g, (_m, i: string) => `the output of condition ${Number(i) + 1}`);
}

/**
 * What to call a node waiting for a decision: its name, or for an approval
 * node (which has none) what it approves: "approval of “Writer”".
 */
export function approvalName(nodes: readonly N[], edges: readonly E[], id: string): string {
  const n = nodes.find((x) => x.id === id);
  if (n?.type === 'approval') {
    const into = (t: string) => edges.find((e) => e.target === t && e.sourceHandle !== SUBAGENT_HANDLE);
    const from = into(id);
    if (from) {
      // An if node passes its input on unchanged: what is approved is the
      // output of the node before it ("approval of “Writer”", not of the if).
      let src = from.source;
      const seen = new Set([id]);
      for (let s = nodes.find((x) => x.id === src); s?.type === 'if' && !seen.has(src); s = nodes.find((x) => x.id === src)) {
        seen.add(src);
        const up = into(src);
        if (!up) break;
        src = up.source;
      }
      return `approval of ${nodeName(nodes.find((x) => x.id === src), src)}`;
    }
  }
  return nodeName(n, id);
}

/** The note of the newest rejection of a node's own decision in a run's events (not a tool call's), or null. */
export function lastRejection(events: ReadonlyArray<{ nodeId: string; type: string; data?: Record<string, unknown> | null }>, nodeId: string): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.nodeId !== nodeId || e.type !== 'input_received' || e.data?.callId) continue;
    if (e.data?.decision === 'approve') return null;
    if (e.data?.decision === 'reject') return String(e.data.note ?? '').trim() || '(no note)';
  }
  return null;
}
