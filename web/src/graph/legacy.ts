import type { Graph, GraphEdge, GraphNode, NodeData } from './types';

/**
 * Offline fallback for importing legacy visual-format files when
 * POST /api/normalize cannot be reached. The server's normalizer is the
 * authority; this mirrors its documented mapping: top-level x/y → position,
 * `connections` → `edges`, type `input` → `approval`, if.data.condition →
 * conditions[0] (contains), handle `true` → `condition-0`.
 */
export function normalizeLegacy(raw: unknown): { graph: Graph; problems: string[] } {
  const problems: string[] = [];
  const obj = (raw ?? {}) as Record<string, unknown>;
  const rawNodes = Array.isArray(obj.nodes) ? (obj.nodes as unknown[]) : [];
  const rawEdges = Array.isArray(obj.edges)
    ? (obj.edges as unknown[])
    : Array.isArray(obj.connections)
      ? (obj.connections as unknown[])
      : [];
  const ifNodes = new Set<string>();
  const nodes: GraphNode[] = [];
  rawNodes.forEach((v, i) => {
    const n = (v ?? {}) as Record<string, unknown>;
    if (typeof n.id !== 'string' || n.id === '') {
      problems.push(`nodes[${i}] has no id; skipped`);
      return;
    }
    let type = typeof n.type === 'string' ? n.type : 'agent';
    if (type === 'input') type = 'approval';
    const pos = (n.position ?? {}) as Record<string, unknown>;
    const x = typeof pos.x === 'number' ? pos.x : typeof n.x === 'number' ? n.x : 0;
    const y = typeof pos.y === 'number' ? pos.y : typeof n.y === 'number' ? n.y : 0;
    let data: NodeData = { ...((n.data ?? {}) as NodeData) };
    if (type === 'if') {
      ifNodes.add(n.id);
      if (typeof data.condition === 'string' && !Array.isArray(data.conditions)) {
        const { condition, ...rest } = data;
        data = { ...rest, conditions: [{ operator: 'contains', value: condition }] };
      }
    }
    nodes.push({ id: n.id, type, position: { x, y }, data });
  });
  const ids = new Set(nodes.map((n) => n.id));
  const edges: GraphEdge[] = [];
  rawEdges.forEach((v, i) => {
    const e = (v ?? {}) as Record<string, unknown>;
    const source = typeof e.source === 'string' ? e.source : '';
    const target = typeof e.target === 'string' ? e.target : '';
    if (!ids.has(source) || !ids.has(target)) {
      problems.push(`connection ${i} names a missing node; skipped`);
      return;
    }
    let sourceHandle = typeof e.sourceHandle === 'string' ? e.sourceHandle : 'output';
    if (ifNodes.has(source) && sourceHandle === 'true') sourceHandle = 'condition-0';
    const targetHandle = typeof e.targetHandle === 'string' ? e.targetHandle : 'input';
    const id = typeof e.id === 'string' && e.id !== '' ? e.id : `e${i + 1}`;
    edges.push({ id, source, target, sourceHandle, targetHandle });
  });
  return { graph: { nodes, edges }, problems };
}
