// Orthogonal routes for a canvas's edges (graph/route.ts): the canvas
// provides the node boxes; each edge routes itself around them.
import { createContext, useContext, useMemo, useRef, type ReactNode } from 'react';
import { curveIsClear, routeEdge, type Box, type Pt } from '../graph/route';
import { isGroupNodeId } from '../graph/groups';
import type { FlowEdge, FlowNode } from '../graph/types';

/** Above this many nodes edges stay curves: routing each is too slow to keep dragging smooth. */
export const ROUTE_MAX_NODES = 150;
/** Space between the last vertical segments of edges that enter the same node. */
const LANE_GAP = 10;

type Routes = {
  boxes: readonly Box[];
  /** Nodes being dragged: their edges are curves until the drop. */
  dragging: ReadonlySet<string>;
  /** Edge id → offset of its last vertical segment, for edges sharing a target. */
  lanes: ReadonlyMap<string, number>;
};

const RoutesContext = createContext<Routes | null>(null);

const DEFAULT_W = 220;
const DEFAULT_H = 90;

/** Provides the routes' inputs for these nodes and edges (nothing above ROUTE_MAX_NODES). */
export function RoutesProvider({ nodes, edges, children }: { nodes: readonly FlowNode[]; edges: readonly FlowEdge[]; children: ReactNode }) {
  const frozen = useRef<readonly Box[]>([]);
  const dragging = useMemo(() => new Set(nodes.filter((n) => n.dragging).map((n) => n.id)), [nodes]);
  const boxes = useMemo(() => {
    // While nodes are dragged the other edges keep their routes (the boxes they were routed around).
    if (dragging.size > 0) return frozen.current;
    const b = nodes
      .filter((n) => !isGroupNodeId(n.id))
      .map((n) => ({
        id: n.id,
        x: n.position.x,
        y: n.position.y,
        width: n.measured?.width ?? n.width ?? DEFAULT_W,
        height: n.measured?.height ?? n.height ?? DEFAULT_H,
      }));
    frozen.current = b;
    return b;
  }, [nodes, dragging]);
  const lanes = useMemo(() => {
    const y = new Map(nodes.map((n) => [n.id, n.position.y]));
    const byTarget = new Map<string, FlowEdge[]>();
    for (const e of edges) if (e.type !== 'subagent') (byTarget.get(e.target) ?? byTarget.set(e.target, []).get(e.target)!).push(e);
    const out = new Map<string, number>();
    for (const list of byTarget.values()) {
      if (list.length < 2) continue;
      list.sort((a, b) => (y.get(a.source) ?? 0) - (y.get(b.source) ?? 0));
      list.forEach((e, k) => out.set(e.id, k * LANE_GAP));
    }
    return out;
  }, [nodes, edges]);
  const value = useMemo(() => (nodes.length > ROUTE_MAX_NODES ? null : { boxes, dragging, lanes }), [nodes.length, boxes, dragging, lanes]);
  return <RoutesContext.Provider value={value}>{children}</RoutesContext.Provider>;
}

/** The orthogonal route of an edge, or null (a clear curve, no routing here, a dragged end, no way round). */
export function useRoute(e: { id: string; source: string; target: string; sourceX: number; sourceY: number; targetX: number; targetY: number }): Pt[] | null {
  const r = useContext(RoutesContext);
  const off = !r || r.dragging.has(e.source) || r.dragging.has(e.target);
  const lane = r?.lanes.get(e.id) ?? 0;
  const boxes = r?.boxes;
  return useMemo(() => {
    if (off || !boxes) return null;
    const s = { x: e.sourceX, y: e.sourceY };
    const t = { x: e.targetX, y: e.targetY };
    // A forward curve that passes no other node stays a curve (it reads best);
    // one that would run behind a node is routed around it.
    if (t.x > s.x && curveIsClear(s, t, boxes.filter((b) => b.id !== e.source && b.id !== e.target))) return null;
    return routeEdge(s, t, boxes, lane);
  }, [off, boxes, lane, e.source, e.target, e.sourceX, e.sourceY, e.targetX, e.targetY]);
}
