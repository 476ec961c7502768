// Nodes a YAML workflow's `include:` inlined carry data.group (the include
// node's id) and data.groupLabel (the included workflow's name). The canvas
// draws each group as a labelled box behind its nodes: a background node
// derived from the members' positions and sizes, never stored, never
// selected, recomputed as members move.
import type { FlowNode } from './types';

export const GROUP_NODE_TYPE = 'includeGroup';
const PREFIX = 'group:';
/** Space around the members, and the label's band on top. */
const PAD = 18;
const LABEL = 24;
/** Size assumed for a node React Flow has not measured yet (a YAML step). */
const DEFAULT_W = 200;
const DEFAULT_H = 80;

export type GroupData = { group: string; label: string; members: number };

export function isGroupNodeId(id: string): boolean {
  return id.startsWith(PREFIX);
}

export function groupOf(n: { data: Record<string, unknown> }): string {
  const g = n.data.group;
  return typeof g === 'string' ? g : '';
}

/** Whether a node was inlined by an include (so it is not in the file). */
export function isIncluded(n: { data: Record<string, unknown> } | undefined): boolean {
  return !!n && groupOf(n) !== '';
}

/** The group boxes of these nodes, in order of first member. */
export function groupBoxes(nodes: readonly FlowNode[]): FlowNode[] {
  const boxes = new Map<string, { x0: number; y0: number; x1: number; y1: number; label: string; members: number }>();
  for (const n of nodes) {
    const g = groupOf(n);
    if (!g) continue;
    const w = n.measured?.width ?? n.width ?? DEFAULT_W;
    const h = n.measured?.height ?? n.height ?? DEFAULT_H;
    const { x, y } = n.position;
    const b = boxes.get(g);
    const label = typeof n.data.groupLabel === 'string' && n.data.groupLabel ? n.data.groupLabel : g;
    if (!b) boxes.set(g, { x0: x, y0: y, x1: x + w, y1: y + h, label, members: 1 });
    else {
      b.x0 = Math.min(b.x0, x);
      b.y0 = Math.min(b.y0, y);
      b.x1 = Math.max(b.x1, x + w);
      b.y1 = Math.max(b.y1, y + h);
      b.members++;
    }
  }
  const out: FlowNode[] = [];
  for (const [g, b] of boxes) {
    const width = Math.round(b.x1 - b.x0 + 2 * PAD);
    const height = Math.round(b.y1 - b.y0 + 2 * PAD + LABEL);
    const data: GroupData = { group: g, label: b.label, members: b.members };
    out.push({
      id: PREFIX + g,
      type: GROUP_NODE_TYPE,
      position: { x: Math.round(b.x0 - PAD), y: Math.round(b.y0 - PAD - LABEL) },
      data,
      width,
      height,
      style: { width, height },
      selectable: false,
      draggable: false,
      connectable: false,
      focusable: false,
      deletable: false,
      zIndex: -1,
      ariaLabel: `Included workflow ${b.label} (include step ${g})`,
    });
  }
  return out;
}

/** The nodes with their group boxes first (drawn behind); the same array when there are none. */
export function withGroups(nodes: FlowNode[]): FlowNode[] {
  if (!nodes.some((n) => groupOf(n))) return nodes;
  return [...groupBoxes(nodes), ...nodes];
}
