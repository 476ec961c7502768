import { isSubagentEdge } from './handles';
import type { FlowEdge, FlowNode, Graph, GraphEdge, GraphNode } from './types';

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

/** Strips React Flow's view state so only the stored shape is left. */
export function toGraph(nodes: readonly FlowNode[], edges: readonly FlowEdge[]): Graph {
  return {
    nodes: nodes.map(
      (n): GraphNode => ({
        id: n.id,
        type: n.type ?? 'agent',
        position: { x: Math.round(num(n.position.x)), y: Math.round(num(n.position.y)) },
        data: n.data,
      }),
    ),
    edges: edges.map((e): GraphEdge => {
      const out: GraphEdge = { id: e.id, source: e.source, target: e.target };
      if (e.sourceHandle != null) out.sourceHandle = e.sourceHandle;
      if (e.targetHandle != null) out.targetHandle = e.targetHandle;
      return out;
    }),
  };
}

export function edgeViewType(e: { sourceHandle?: string | null }): 'subagent' | 'exec' {
  return isSubagentEdge(e) ? 'subagent' : 'exec';
}

export function toFlowEdge(e: GraphEdge): FlowEdge {
  return {
    id: e.id,
    source: e.source,
    target: e.target,
    sourceHandle: e.sourceHandle ?? null,
    targetHandle: e.targetHandle ?? null,
    type: edgeViewType(e),
  };
}

export function toFlowNode(n: GraphNode): FlowNode {
  return { id: n.id, type: n.type, position: { x: num(n.position?.x), y: num(n.position?.y) }, data: n.data ?? {} };
}

export class GraphShapeError extends Error {}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks that parsed JSON has the current graph shape. Returns the graph or
 * throws GraphShapeError naming the first bad element.
 */
export function parseGraph(raw: unknown): Graph {
  if (!isObj(raw)) throw new GraphShapeError('graph must be a JSON object');
  const { nodes, edges } = raw;
  if (!Array.isArray(nodes)) throw new GraphShapeError('graph.nodes must be an array');
  if (edges !== undefined && !Array.isArray(edges)) throw new GraphShapeError('graph.edges must be an array');
  const outNodes: GraphNode[] = nodes.map((n, i) => {
    if (!isObj(n)) throw new GraphShapeError(`nodes[${i}] must be an object`);
    if (typeof n.id !== 'string' || n.id === '') throw new GraphShapeError(`nodes[${i}].id must be a non-empty string`);
    if (typeof n.type !== 'string') throw new GraphShapeError(`node ${n.id}: type must be a string`);
    const p = n.position;
    if (!isObj(p)) throw new GraphShapeError(`node ${n.id}: position must be an object`);
    const data = n.data === undefined ? {} : n.data;
    if (!isObj(data)) throw new GraphShapeError(`node ${n.id}: data must be an object`);
    return { id: n.id, type: n.type, position: { x: num(p.x), y: num(p.y) }, data };
  });
  const outEdges: GraphEdge[] = ((edges as unknown[] | undefined) ?? []).map((e, i) => {
    if (!isObj(e)) throw new GraphShapeError(`edges[${i}] must be an object`);
    if (typeof e.source !== 'string' || typeof e.target !== 'string')
      throw new GraphShapeError(`edges[${i}]: source and target must be strings`);
    const id = typeof e.id === 'string' && e.id !== '' ? e.id : `e${i + 1}`;
    const out: GraphEdge = { id, source: e.source, target: e.target };
    if (typeof e.sourceHandle === 'string') out.sourceHandle = e.sourceHandle;
    if (typeof e.targetHandle === 'string') out.targetHandle = e.targetHandle;
    return out;
  });
  return { nodes: outNodes, edges: outEdges };
}

/** True when a parsed file looks like the legacy visual format. */
export function looksLegacy(raw: unknown): boolean {
  if (!isObj(raw)) return false;
  if (Array.isArray(raw.connections)) return true;
  if (!Array.isArray(raw.nodes)) return false;
  return raw.nodes.some((n) => {
    if (!isObj(n)) return false;
    if (!isObj(n.position) && (typeof n.x === 'number' || typeof n.y === 'number')) return true;
    if (n.type === 'input') return true;
    if (n.type === 'if' && isObj(n.data) && typeof n.data.condition === 'string') return true;
    return false;
  });
}
