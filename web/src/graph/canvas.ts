import { layeredLayout, needsLayout } from './layout';
import { edgeViewType } from './serialize';
import { INPUT_HANDLE, OUTPUT_HANDLE, isEditableType, type FlowEdge, type FlowNode, type NodeData } from './types';

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Lenient conversion of any graph-like value (a stored graph, a run's graph
 * snapshot, a YAML workflow's projection) into canvas nodes and edges. Node
 * types the editor does not know become read-only `yaml` nodes; graphs
 * without positions are laid out.
 */
export function toCanvas(raw: unknown): { nodes: FlowNode[]; edges: FlowEdge[] } {
  const g = isObj(raw) ? raw : {};
  const rawNodes = Array.isArray(g.nodes) ? g.nodes : [];
  const rawEdges = Array.isArray(g.edges) ? g.edges : [];
  const generic = new Set<string>();
  const nodes: FlowNode[] = [];
  const seen = new Set<string>();
  for (const v of rawNodes) {
    if (!isObj(v) || typeof v.id !== 'string' || seen.has(v.id)) continue;
    seen.add(v.id);
    const t = typeof v.type === 'string' ? v.type : '';
    const data: NodeData = isObj(v.data) ? v.data : {};
    const p = isObj(v.position) ? v.position : {};
    const position = { x: typeof p.x === 'number' ? p.x : 0, y: typeof p.y === 'number' ? p.y : 0 };
    if (isEditableType(t)) {
      nodes.push({ id: v.id, type: t, position, data });
    } else {
      generic.add(v.id);
      const label =
        typeof data.label === 'string'
          ? data.label
          : typeof v.label === 'string'
            ? v.label
            : typeof data.name === 'string'
              ? data.name
              : v.id;
      // The server projects YAML steps as type "yaml" with the step kind in
      // data.kind; other producers put the kind in the type itself.
      const kind = t && t !== 'yaml' ? t : typeof data.kind === 'string' && data.kind ? data.kind : 'node';
      nodes.push({ id: v.id, type: 'yaml', position, data: { ...data, label, kind } });
    }
  }
  const edges: FlowEdge[] = [];
  rawEdges.forEach((v, i) => {
    if (!isObj(v) || typeof v.source !== 'string' || typeof v.target !== 'string') return;
    if (!seen.has(v.source) || !seen.has(v.target)) return;
    let sourceHandle = typeof v.sourceHandle === 'string' ? v.sourceHandle : null;
    let targetHandle = typeof v.targetHandle === 'string' ? v.targetHandle : null;
    if (generic.has(v.source)) sourceHandle = OUTPUT_HANDLE;
    if (generic.has(v.target)) targetHandle = INPUT_HANDLE;
    const id = typeof v.id === 'string' && v.id !== '' ? v.id : `e${i + 1}`;
    edges.push({ id, source: v.source, target: v.target, sourceHandle, targetHandle, type: edgeViewType({ sourceHandle }) });
  });
  if (needsLayout(nodes)) {
    const pos = layeredLayout(nodes, edges);
    for (let i = 0; i < nodes.length; i++) {
      const p = pos.get(nodes[i]!.id);
      if (p) nodes[i] = { ...nodes[i]!, position: p };
    }
  }
  return { nodes, edges };
}
