// Orthogonal edge routes that go around nodes: an edge leaves its source
// to the right, enters its target from the left, and in between runs in
// horizontal and vertical segments through the gaps between node boxes,
// with as few bends as it can. A long edge of a layered workflow no longer
// runs behind the nodes of the layers it skips (which made it look like a
// dependency on them).
//
// The search is A* over the "interesting" coordinates: every box edge
// (inflated by PAD), the middle of every gap between them, and the two end
// stubs. A segment between two neighbouring coordinates is blocked when its
// middle lies inside a box.

export type Box = { id: string; x: number; y: number; width: number; height: number };
export type Pt = { x: number; y: number };

/** Clearance kept around nodes. */
export const PAD = 14;
/** How far an edge runs straight out of its source and into its target. */
export const STUB = 18;
/** Cost of a bend, in pixels of length: fewer bends beat slightly shorter routes. */
const BEND = 60;
/** Boxes farther than this from the straight line's bounding box are left out of the search. */
const REACH = 320;
/** More coordinates than this on an axis: too big to search per edge; the caller draws a curve. */
const MAX_AXIS = 260;

function inside(boxes: readonly Box[], x: number, y: number): boolean {
  for (const b of boxes) if (x > b.x && x < b.x + b.width && y > b.y && y < b.y + b.height) return true;
  return false;
}

/** Sorted unique values, plus the middle of each gap between neighbours. */
function axis(values: number[]): number[] {
  const v = [...new Set(values.map((n) => Math.round(n)))].sort((a, b) => a - b);
  const out: number[] = [];
  for (let i = 0; i < v.length; i++) {
    out.push(v[i]!);
    if (i + 1 < v.length && v[i + 1]! - v[i]! > 2) out.push(Math.round((v[i]! + v[i + 1]!) / 2));
  }
  return out;
}

/** A small binary heap of [cost, key]. */
class Heap {
  private a: Array<[number, number]> = [];
  get size() {
    return this.a.length;
  }
  push(c: number, k: number) {
    const a = this.a;
    a.push([c, k]);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]![0] <= a[i]![0]) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): [number, number] {
    const a = this.a;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l]![0] < a[m]![0]) m = l;
        if (r < a.length && a[r]![0] < a[m]![0]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}

const DX = [1, 0, -1, 0];
const DY = [0, 1, 0, -1];

/**
 * Points along the curve React Flow draws from a right-side handle to a
 * left-side one (getBezierPath, curvature 0.25): control points half the
 * horizontal distance out, or 25·0.25·√d for a backward edge.
 */
export function bezierPoints(s: Pt, t: Pt, steps = 24): Pt[] {
  const dx = t.x - s.x;
  const off = dx >= 0 ? 0.5 * dx : 0.25 * 25 * Math.sqrt(-dx);
  const c1 = { x: s.x + off, y: s.y };
  const c2 = { x: t.x - off, y: t.y };
  const out: Pt[] = [];
  for (let i = 0; i <= steps; i++) {
    const u = i / steps;
    const v = 1 - u;
    out.push({
      x: v * v * v * s.x + 3 * v * v * u * c1.x + 3 * v * u * u * c2.x + u * u * u * t.x,
      y: v * v * v * s.y + 3 * v * v * u * c1.y + 3 * v * u * u * c2.y + u * u * u * t.y,
    });
  }
  return out;
}

/** Whether the plain curve from s to t stays clear of every box (inflated by a little). */
export function curveIsClear(s: Pt, t: Pt, boxes: readonly Box[], clearance = 6): boolean {
  const pts = bezierPoints(s, t);
  for (const b of boxes) {
    const x0 = b.x - clearance;
    const y0 = b.y - clearance;
    const x1 = b.x + b.width + clearance;
    const y1 = b.y + b.height + clearance;
    for (const p of pts) if (p.x > x0 && p.x < x1 && p.y > y0 && p.y < y1) return false;
  }
  return true;
}

/**
 * The corner points of an orthogonal route from the source handle `s`
 * (leaving right) to the target handle `t` (entering from the left) that
 * avoids `boxes` (the source's and target's own boxes included: the route
 * leaves and enters through their stubs). Null when the boxes leave no way
 * (the caller draws a curve instead).
 */
export function routeEdge(s: Pt, t: Pt, boxes: readonly Box[], lane = 0): Pt[] | null {
  const s1 = { x: s.x + STUB, y: s.y };
  const t1 = { x: t.x - STUB - lane, y: t.y };
  // A plain straight line needs no search.
  const lo = { x: Math.min(s1.x, t1.x) - REACH, y: Math.min(s1.y, t1.y) - REACH };
  const hi = { x: Math.max(s1.x, t1.x) + REACH, y: Math.max(s1.y, t1.y) + REACH };
  const near = boxes
    .filter((b) => b.x < hi.x && b.x + b.width > lo.x && b.y < hi.y && b.y + b.height > lo.y)
    .map((b) => ({ ...b, x: b.x - PAD, y: b.y - PAD, width: b.width + 2 * PAD, height: b.height + 2 * PAD }));
  if (s.y === t.y && t1.x >= s1.x && !near.some((b) => s.y > b.y && s.y < b.y + b.height && b.x < t1.x && b.x + b.width > s1.x)) {
    return [s, t];
  }
  // The stubs' own ends must be free (a node overlapping the handle: give up).
  if (inside(near, s1.x, s1.y) || inside(near, t1.x, t1.y)) return null;
  const xs = axis([s1.x, t1.x, ...near.flatMap((b) => [b.x, b.x + b.width])]);
  const ys = axis([s1.y, t1.y, ...near.flatMap((b) => [b.y, b.y + b.height])]);
  // One step beyond the outermost boxes, so a route can go round everything.
  xs.unshift(xs[0]! - 40);
  xs.push(xs[xs.length - 1]! + 40);
  ys.unshift(ys[0]! - 40);
  ys.push(ys[ys.length - 1]! + 40);
  if (xs.length > MAX_AXIS || ys.length > MAX_AXIS) return null;
  const W = xs.length;
  const H = ys.length;
  const si = xs.indexOf(Math.round(s1.x));
  const sj = ys.indexOf(Math.round(s1.y));
  const ti = xs.indexOf(Math.round(t1.x));
  const tj = ys.indexOf(Math.round(t1.y));
  if (si < 0 || sj < 0 || ti < 0 || tj < 0) return null;
  // Blocked moves: from grid point (i, j) in direction d.
  const blocked = (i: number, j: number, d: number) => {
    const i2 = i + DX[d]!;
    const j2 = j + DY[d]!;
    if (i2 < 0 || j2 < 0 || i2 >= W || j2 >= H) return true;
    return inside(near, (xs[i]! + xs[i2]!) / 2, (ys[j]! + ys[j2]!) / 2) || inside(near, xs[i2]!, ys[j2]!);
  };
  const key = (i: number, j: number, d: number) => (j * W + i) * 4 + d;
  const best = new Float64Array(W * H * 4).fill(Infinity);
  const from = new Int32Array(W * H * 4).fill(-1);
  const h = (i: number, j: number) => Math.abs(xs[i]! - xs[ti]!) + Math.abs(ys[j]! - ys[tj]!);
  const heap = new Heap();
  // Leaving the source stub heading right (d = 0).
  const k0 = key(si, sj, 0);
  best[k0] = 0;
  heap.push(h(si, sj), k0);
  let end = -1;
  while (heap.size > 0) {
    const [f, k] = heap.pop();
    const d = k % 4;
    const p = (k - d) / 4;
    const i = p % W;
    const j = (p - i) / W;
    const g = best[k]!;
    if (f - h(i, j) > g + 1e-6) continue; // stale
    // Arrive heading right, into the target's stub.
    if (i === ti && j === tj && d === 0) {
      end = k;
      break;
    }
    for (let nd = 0; nd < 4; nd++) {
      if (nd === (d + 2) % 4) continue; // no U-turns on the spot
      if (blocked(i, j, nd)) continue;
      const i2 = i + DX[nd]!;
      const j2 = j + DY[nd]!;
      const cost = g + Math.abs(xs[i2]! - xs[i]!) + Math.abs(ys[j2]! - ys[j]!) + (nd === d ? 0 : BEND);
      const k2 = key(i2, j2, nd);
      if (cost < best[k2]!) {
        best[k2] = cost;
        from[k2] = k;
        heap.push(cost + h(i2, j2), k2);
      }
    }
    // Turning on the spot to head right at the target stub.
    if (i === ti && j === tj && d !== 0) {
      const k2 = key(i, j, 0);
      if (g + BEND < best[k2]!) {
        best[k2] = g + BEND;
        from[k2] = k;
        heap.push(g + BEND, k2);
      }
    }
  }
  if (end < 0) return null;
  const cells: Pt[] = [];
  for (let k = end; k >= 0; k = from[k]!) {
    const p = (k - (k % 4)) / 4;
    const i = p % W;
    const j = (p - i) / W;
    const pt = { x: xs[i]!, y: ys[j]! };
    const last = cells[cells.length - 1];
    if (!last || last.x !== pt.x || last.y !== pt.y) cells.push(pt);
  }
  cells.reverse();
  return simplify([s, ...cells, { x: t.x, y: t.y }]);
}

/** Drops points in the middle of straight runs. */
export function simplify(pts: Pt[]): Pt[] {
  const out: Pt[] = [];
  for (const p of pts) {
    const a = out[out.length - 2];
    const b = out[out.length - 1];
    if (b && b.x === p.x && b.y === p.y) continue;
    if (a && b && ((a.x === b.x && b.x === p.x) || (a.y === b.y && b.y === p.y))) out[out.length - 1] = p;
    else out.push(p);
  }
  return out;
}

/** An SVG path through the points with rounded corners. */
export function roundedPath(pts: readonly Pt[], radius = 8): string {
  if (pts.length === 0) return '';
  let d = `M ${pts[0]!.x},${pts[0]!.y}`;
  for (let i = 1; i < pts.length; i++) {
    const p = pts[i]!;
    const prev = pts[i - 1]!;
    const next = pts[i + 1];
    if (!next) {
      d += ` L ${p.x},${p.y}`;
      break;
    }
    const inLen = Math.abs(p.x - prev.x) + Math.abs(p.y - prev.y);
    const outLen = Math.abs(next.x - p.x) + Math.abs(next.y - p.y);
    const r = Math.min(radius, inLen / 2, outLen / 2);
    const ax = p.x - Math.sign(p.x - prev.x) * r;
    const ay = p.y - Math.sign(p.y - prev.y) * r;
    const bx = p.x + Math.sign(next.x - p.x) * r;
    const by = p.y + Math.sign(next.y - p.y) * r;
    d += ` L ${ax},${ay} Q ${p.x},${p.y} ${bx},${by}`;
  }
  return d;
}

/** Whether a polyline passes through the inside of any box (for tests and checks). */
export function crossesBoxes(pts: readonly Pt[], boxes: readonly Box[]): string | null {
  for (let i = 1; i < pts.length; i++) {
    const a = pts[i - 1]!;
    const b = pts[i]!;
    const steps = Math.max(1, Math.ceil((Math.abs(b.x - a.x) + Math.abs(b.y - a.y)) / 4));
    for (let k = 0; k <= steps; k++) {
      const x = a.x + ((b.x - a.x) * k) / steps;
      const y = a.y + ((b.y - a.y) * k) / steps;
      for (const bx of boxes) if (x > bx.x && x < bx.x + bx.width && y > bx.y && y < bx.y + bx.height) return bx.id;
    }
  }
  return null;
}

/** The label spot of a route: the middle of its longest horizontal segment (or its middle point). */
export function labelPoint(pts: readonly Pt[]): Pt {
  let best: Pt | null = null;
  let len = -1;
  for (let i = 1; i < pts.length; i++) {
    const a = pts[i - 1]!;
    const b = pts[i]!;
    if (a.y !== b.y) continue;
    const l = Math.abs(b.x - a.x);
    if (l > len) {
      len = l;
      best = { x: (a.x + b.x) / 2, y: a.y };
    }
  }
  return best ?? pts[Math.floor(pts.length / 2)] ?? { x: 0, y: 0 };
}
