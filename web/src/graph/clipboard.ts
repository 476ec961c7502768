import { idAllocator } from './ids';
import { edgeViewType } from './serialize';
import type { FlowEdge, FlowNode, Graph, GraphEdge, GraphNode } from './types';

/** What Ctrl+C keeps: the selected nodes and the edges between them. */
export function copySelection(nodes: readonly FlowNode[], edges: readonly FlowEdge[]): Graph | null {
  const picked = nodes.filter((n) => n.selected);
  if (picked.length === 0) return null;
  const ids = new Set(picked.map((n) => n.id));
  return {
    nodes: picked.map((n) => ({
      id: n.id,
      type: n.type ?? 'agent',
      position: { ...n.position },
      data: structuredClone(n.data),
    })),
    edges: edges
      .filter((e) => ids.has(e.source) && ids.has(e.target))
      .map((e): GraphEdge => ({
        id: e.id,
        source: e.source,
        target: e.target,
        sourceHandle: e.sourceHandle ?? null,
        targetHandle: e.targetHandle ?? null,
      })),
  };
}

/** A copy's name: "Writer (copy)", then "Writer (copy 2)"… — one no other node has. */
export function copyName(name: string, taken: ReadonlySet<string>): string {
  const base = name.replace(/ \(copy(?: \d+)?\)$/, '');
  for (let k = 1; ; k++) {
    const n = k === 1 ? `${base} (copy)` : `${base} (copy ${k})`;
    if (!taken.has(n)) return n;
  }
}

/**
 * Fresh copies of a clipboard graph with new ids, shifted by `offset`, ready
 * to append; a copied agent gets its own name (`copyName`). Pasted nodes
 * come back selected so they can be moved at once.
 */
export function pasteGraph(
  clip: Graph,
  existingNodeIds: Iterable<string>,
  existingEdgeIds: Iterable<string>,
  offset: { x: number; y: number },
  existingNames: Iterable<string> = [],
): { nodes: FlowNode[]; edges: FlowEdge[] } {
  const newNodeId = idAllocator('n', existingNodeIds);
  const newEdgeId = idAllocator('e', existingEdgeIds);
  const names = new Set(existingNames);
  const map = new Map<string, string>();
  const nodes: FlowNode[] = clip.nodes.map((n: GraphNode) => {
    const id = newNodeId();
    map.set(n.id, id);
    const data = structuredClone(n.data);
    const name = data.agentName;
    if (typeof name === 'string' && name) {
      const fresh = copyName(name, names);
      data.agentName = fresh;
      names.add(fresh);
    }
    return {
      id,
      type: n.type,
      position: { x: n.position.x + offset.x, y: n.position.y + offset.y },
      data,
      selected: true,
    };
  });
  const edges: FlowEdge[] = [];
  for (const e of clip.edges) {
    const source = map.get(e.source);
    const target = map.get(e.target);
    if (!source || !target) continue;
    edges.push({
      id: newEdgeId(),
      source,
      target,
      sourceHandle: e.sourceHandle ?? null,
      targetHandle: e.targetHandle ?? null,
      type: edgeViewType(e),
    });
  }
  return { nodes, edges };
}

/**
 * Where a paste goes: shifted by `step` down and right, and by another step
 * as long as a pasted node would land exactly where a node already is (a
 * second paste of the same clipboard goes below the first, not on top of it).
 */
export function pasteOffset(
  clip: Graph,
  existing: ReadonlyArray<{ position: { x: number; y: number } }>,
  step = 40,
): { x: number; y: number } {
  const taken = new Set(existing.map((n) => `${Math.round(n.position.x)},${Math.round(n.position.y)}`));
  for (let k = 1; ; k++) {
    const dx = step * k;
    const clash = clip.nodes.some((n) => taken.has(`${Math.round(n.position.x + dx)},${Math.round(n.position.y + dx)}`));
    if (!clash || k > 1000) return { x: dx, y: dx };
  }
}
