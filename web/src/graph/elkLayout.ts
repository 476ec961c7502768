import type { ElkNode } from 'elkjs/lib/elk-api';
import { estimatedBoxes, layeredLayout, type LayoutInputEdge, type LayoutInputNode, type Point } from './layout';

/** ELK's layered algorithm, left to right; cycles (revise loops) are broken by ELK. */
export const ELK_OPTIONS: Record<string, string> = {
  'elk.algorithm': 'layered',
  'elk.direction': 'RIGHT',
  'elk.layered.spacing.nodeNodeBetweenLayers': '90',
  'elk.spacing.nodeNode': '40',
  'elk.layered.cycleBreaking.strategy': 'DEPTH_FIRST',
  'elk.layered.nodePlacement.strategy': 'BRANDES_KOEPF',
  'elk.layered.crossingMinimization.strategy': 'LAYER_SWEEP',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
};

const DEFAULT_W = 240;
const DEFAULT_H = 110;

/** The ELK graph for nodes and edges (self-loops and dangling edges dropped). */
export function elkGraph(nodes: readonly LayoutInputNode[], edges: readonly LayoutInputEdge[]): ElkNode {
  const ids = new Set(nodes.map((n) => n.id));
  return {
    id: 'root',
    layoutOptions: ELK_OPTIONS,
    children: nodes.map((n) => ({ id: n.id, width: n.width ?? DEFAULT_W, height: n.height ?? DEFAULT_H })),
    edges: edges
      .filter((e) => e.source !== e.target && ids.has(e.source) && ids.has(e.target))
      .map((e, i) => ({ id: `e${i}`, sources: [e.source], targets: [e.target] })),
  };
}

/** Layouts in progress, for tests and a busy cursor: <html data-layout-busy>. */
let busy = 0;
function setBusy(delta: number) {
  busy += delta;
  if (typeof document !== 'undefined') document.documentElement.toggleAttribute('data-layout-busy', busy > 0);
}

let elk: Promise<{ layout: (g: ElkNode) => Promise<ElkNode> }> | null = null;

/** Loads ELK on first use (it is large; the editor should not wait for it). */
function loadElk() {
  elk ??= import('elkjs/lib/elk.bundled.js').then((m) => new m.default());
  return elk;
}

/**
 * Positions for a layered, left-to-right layout by ELK. Should ELK fail to
 * load or run, the small built-in layered layout answers instead.
 */
export async function elkLayout(
  nodes: readonly LayoutInputNode[],
  edges: readonly LayoutInputEdge[],
): Promise<Map<string, Point>> {
  setBusy(1);
  try {
    const e = await loadElk();
    const res = await e.layout(elkGraph(nodes, edges));
    const out = new Map<string, Point>();
    for (const c of res.children ?? []) out.set(c.id, { x: Math.round(c.x ?? 0), y: Math.round(c.y ?? 0) });
    return out;
  } catch (err) {
    console.warn('ELK layout failed; using the built-in layout', err);
    return layeredLayout(nodes, edges);
  } finally {
    // Cleared once the caller has applied the positions (its continuation
    // runs in a microtask; a timer runs after those).
    setTimeout(() => setBusy(-1), 0);
  }
}

/** A graph whose nodes ELK placed (sizes estimated: the nodes are not drawn yet). */
export async function arrangedByElk<G extends { nodes: { id: string; type?: string; position: Point }[]; edges: LayoutInputEdge[] }>(
  g: G,
): Promise<G> {
  const pos = await elkLayout(estimatedBoxes(g.nodes), g.edges);
  return { ...g, nodes: g.nodes.map((n) => ({ ...n, position: pos.get(n.id) ?? n.position })) };
}
