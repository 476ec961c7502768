/**
 * A small layered (Sugiyama-style) layout, left to right: break cycles,
 * assign layers by longest path, order each layer by barycenter sweeps, then
 * place layers in columns. Good enough for workflow graphs and dependency-free.
 */
export type LayoutInputNode = { id: string; width?: number; height?: number; y?: number };
export type LayoutInputEdge = { source: string; target: string };
export type LayoutOptions = {
  rankGap: number;
  nodeGap: number;
  defaultWidth: number;
  defaultHeight: number;
  sweeps: number;
};
export type Point = { x: number; y: number };

const DEFAULTS: LayoutOptions = { rankGap: 90, nodeGap: 36, defaultWidth: 240, defaultHeight: 110, sweeps: 4 };

export function layeredLayout(
  nodes: readonly LayoutInputNode[],
  edges: readonly LayoutInputEdge[],
  options: Partial<LayoutOptions> = {},
): Map<string, Point> {
  const o = { ...DEFAULTS, ...options };
  const index = new Map<string, number>();
  nodes.forEach((n, i) => index.set(n.id, i));
  const N = nodes.length;
  const out: number[][] = Array.from({ length: N }, () => []);
  for (const e of edges) {
    const s = index.get(e.source);
    const t = index.get(e.target);
    if (s === undefined || t === undefined || s === t) continue;
    out[s]!.push(t);
  }

  // 1. Drop back edges found by an iterative DFS so the rest is acyclic.
  const state = new Uint8Array(N); // 0 new, 1 on stack, 2 done
  const dag: number[][] = Array.from({ length: N }, () => []);
  for (let root = 0; root < N; root++) {
    if (state[root] !== 0) continue;
    const stack: Array<[number, number]> = [[root, 0]];
    state[root] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const [v, i] = top;
      const succ = out[v]!;
      if (i < succ.length) {
        top[1] = i + 1;
        const w = succ[i]!;
        if (state[w] === 1) continue; // back edge: ignore for layering
        dag[v]!.push(w);
        if (state[w] === 0) {
          state[w] = 1;
          stack.push([w, 0]);
        }
      } else {
        state[v] = 2;
        stack.pop();
      }
    }
  }

  // 2. Longest-path layering in topological order (Kahn).
  const indeg = new Int32Array(N);
  for (let v = 0; v < N; v++) for (const w of dag[v]!) indeg[w]!++;
  const layer = new Int32Array(N);
  const queue: number[] = [];
  for (let v = 0; v < N; v++) if (indeg[v] === 0) queue.push(v);
  for (let qi = 0; qi < queue.length; qi++) {
    const v = queue[qi]!;
    for (const w of dag[v]!) {
      layer[w] = Math.max(layer[w]!, layer[v]! + 1);
      if (--indeg[w]! === 0) queue.push(w);
    }
  }

  // 3. Order within layers: start from the current vertical order, then
  // barycenter sweeps down and up.
  const layers: number[][] = [];
  for (let v = 0; v < N; v++) (layers[layer[v]!] ??= []).push(v);
  for (const l of layers) if (l) l.sort((a, b) => (nodes[a]!.y ?? a) - (nodes[b]!.y ?? b) || a - b);
  const preds: number[][] = Array.from({ length: N }, () => []);
  for (let v = 0; v < N; v++) for (const w of dag[v]!) preds[w]!.push(v);
  const pos = new Float64Array(N);
  const setPos = () => layers.forEach((l) => l?.forEach((v, i) => (pos[v] = i)));
  setPos();
  const bary = (l: number[], neigh: number[][]) => {
    const key = new Map<number, number>();
    for (const v of l) {
      const ns = neigh[v]!;
      key.set(v, ns.length ? ns.reduce((s, w) => s + pos[w]!, 0) / ns.length : pos[v]!);
    }
    l.sort((a, b) => key.get(a)! - key.get(b)! || pos[a]! - pos[b]!);
    l.forEach((v, i) => (pos[v] = i));
  };
  for (let s = 0; s < o.sweeps; s++) {
    for (let li = 1; li < layers.length; li++) if (layers[li]) bary(layers[li]!, preds);
    for (let li = layers.length - 2; li >= 0; li--) if (layers[li]) bary(layers[li]!, dag);
  }

  // 4. Coordinates: columns by layer, each column centred on y = 0.
  const w = (v: number) => nodes[v]!.width ?? o.defaultWidth;
  const h = (v: number) => nodes[v]!.height ?? o.defaultHeight;
  const result = new Map<string, Point>();
  let x = 0;
  for (const l of layers) {
    if (!l || l.length === 0) continue;
    const colW = Math.max(...l.map(w));
    const total = l.reduce((s, v) => s + h(v), 0) + o.nodeGap * (l.length - 1);
    let y = -total / 2;
    for (const v of l) {
      result.set(nodes[v]!.id, { x: Math.round(x), y: Math.round(y) });
      y += h(v) + o.nodeGap;
    }
    x += colW + o.rankGap;
  }
  return result;
}

/** True when every node sits at the same spot (a projection without positions). */
export function needsLayout(nodes: readonly { position?: { x: number; y: number } }[]): boolean {
  if (nodes.length < 2) return false;
  const first = nodes[0]!.position;
  return nodes.every((n) => !n.position || (n.position.x === first?.x && n.position.y === first?.y));
}

/**
 * The spot nearest to `p` (on a grid of node-sized cells) where a node of
 * the default size does not overlap an existing node. Keeps click-added
 * nodes from landing on each other.
 */
export function freeSpot(
  nodes: readonly { position: { x: number; y: number }; measured?: { width?: number; height?: number } }[],
  p: Point,
  size: { width: number; height: number } = { width: 240, height: 110 },
  gap = 24,
  /** The visible part of the canvas, in flow coordinates: only spots wholly inside it are taken. */
  within?: { x: number; y: number; width: number; height: number },
): Point {
  const inside = (q: Point) =>
    !within ||
    (q.x >= within.x && q.y >= within.y && q.x + size.width <= within.x + within.width && q.y + size.height <= within.y + within.height);
  const hits = (q: Point) =>
    nodes.some((n) => {
      const w = n.measured?.width ?? size.width;
      const h = n.measured?.height ?? size.height;
      return q.x < n.position.x + w + gap && n.position.x < q.x + size.width + gap && q.y < n.position.y + h + gap && n.position.y < q.y + size.height + gap;
    });
  // Nearest free cell first, searching rings around p: inside the visible
  // part when one is free there, else the nearest free cell anywhere (the
  // caller brings it into view): never on top of a node.
  const ring = (n: number) => {
    const cells: Array<[number, number]> = [];
    for (let c = -n; c <= n; c++) for (let r = -n; r <= n; r++) cells.push([c, r]);
    return cells.sort((a, b) => Math.hypot(a[0] * 1.5, a[1]) - Math.hypot(b[0] * 1.5, b[1]) || a[0] - b[0] || a[1] - b[1]);
  };
  const at = ([c, r]: [number, number]) => ({ x: p.x + c * (size.width + gap), y: p.y + r * (size.height + gap) });
  for (const cell of ring(4)) {
    const q = at(cell);
    if (inside(q) && !hits(q)) return q;
  }
  for (const cell of ring(30)) {
    const q = at(cell);
    if (!hits(q)) return q;
  }
  return p;
}

/** Rendered node widths by type (styles.css), for layouts before measuring. */
const TYPE_WIDTH: Record<string, number> = { start: 190, agent: 230, if: 230, approval: 250, yaml: 200 };
const EST_HEIGHT = 90;

/**
 * True when two nodes, at their estimated rendered size, overlap. Legacy
 * files place nodes on a grid made for smaller boxes.
 */
export function nodesOverlap(nodes: readonly { type?: string; position: Point }[]): boolean {
  const boxes = nodes.map((n) => ({ x: n.position.x, y: n.position.y, w: TYPE_WIDTH[n.type ?? ''] ?? 240 }));
  boxes.sort((a, b) => a.x - b.x);
  for (let i = 0; i < boxes.length; i++) {
    const a = boxes[i]!;
    for (let j = i + 1; j < boxes.length && boxes[j]!.x < a.x + a.w; j++) {
      const b = boxes[j]!;
      if (Math.abs(a.y - b.y) < EST_HEIGHT) return true;
    }
  }
  return false;
}

/** The graph with every node placed by layeredLayout at its estimated size. */
/** Estimated boxes of nodes not yet drawn (an imported graph). */
export function estimatedBoxes(nodes: readonly { id: string; type?: string; position: Point }[]): LayoutInputNode[] {
  return nodes.map((n) => ({ id: n.id, width: TYPE_WIDTH[n.type ?? ''], height: EST_HEIGHT + 20, y: n.position.y }));
}

