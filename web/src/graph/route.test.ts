import { describe, expect, it } from 'vitest';
import { crossesBoxes, curveIsClear, labelPoint, roundedPath, routeEdge, simplify, type Box } from './route';

const box = (id: string, x: number, y: number, width = 200, height = 90): Box => ({ id, x, y, width, height });
// Handles: a node's output at its right middle, input at its left middle.
const out = (b: Box) => ({ x: b.x + b.width, y: b.y + b.height / 2 });
const inp = (b: Box) => ({ x: b.x, y: b.y + b.height / 2 });

describe('routeEdge', () => {
  it('a straight edge between neighbours stays one straight segment', () => {
    const a = box('a', 0, 0);
    const b = box('b', 300, 0);
    expect(routeEdge(out(a), inp(b), [a, b])).toEqual([out(a), inp(b)]);
  });

  it('a long edge of a layered graph goes around the nodes of the layers it skips', () => {
    // a → b → c in a row, and a → c skipping b: the straight line runs through b.
    const a = box('a', 0, 0);
    const b = box('b', 300, 0);
    const c = box('c', 600, 0);
    const pts = routeEdge(out(a), inp(c), [a, b, c])!;
    expect(pts).not.toBeNull();
    expect(crossesBoxes(pts, [b])).toBeNull();
    expect(pts[0]).toEqual(out(a));
    expect(pts[pts.length - 1]).toEqual(inp(c));
    // Orthogonal: every segment is horizontal or vertical.
    for (let i = 1; i < pts.length; i++) expect(pts[i]!.x === pts[i - 1]!.x || pts[i]!.y === pts[i - 1]!.y).toBe(true);
  });

  it('a 22-step ladder: every edge avoids every node it does not join', () => {
    const boxes: Box[] = [];
    for (let i = 0; i < 22; i++) boxes.push(box(`n${i}`, (i % 6) * 300, Math.floor(i / 6) * 160));
    const edges: Array<[number, number]> = [];
    for (let i = 1; i < 22; i++) edges.push([Math.floor(i / 3), i]);
    for (const [s, t] of edges) {
      const pts = routeEdge(out(boxes[s]!), inp(boxes[t]!), boxes);
      expect(pts, `edge n${s} → n${t} found a way`).not.toBeNull();
      if (!pts) continue;
      const others = boxes.filter((_, k) => k !== s && k !== t);
      expect(crossesBoxes(pts, others), `edge n${s} → n${t}`).toBeNull();
    }
  });

  it('a back edge (a loop) goes round, entering its target from the left', () => {
    const a = box('a', 0, 0);
    const b = box('b', 300, 0);
    const pts = routeEdge(out(b), inp(a), [a, b])!;
    expect(crossesBoxes(pts.slice(1, -1), [a, b])).toBeNull();
    expect(pts[pts.length - 2]!.x).toBeLessThan(a.x);
  });

  it('gives up when a node sits on the handle', () => {
    const a = box('a', 0, 0);
    const b = box('b', 300, 0);
    const blocker = box('x', 190, 20, 40, 40);
    expect(routeEdge(out(a), inp(b), [a, b, blocker])).toBeNull();
  });
});

describe('path helpers', () => {
  it('simplify drops points inside straight runs', () => {
    expect(simplify([{ x: 0, y: 0 }, { x: 5, y: 0 }, { x: 10, y: 0 }, { x: 10, y: 5 }])).toEqual([
      { x: 0, y: 0 },
      { x: 10, y: 0 },
      { x: 10, y: 5 },
    ]);
  });
  it('roundedPath rounds corners; labelPoint sits on the longest horizontal run', () => {
    const pts = [{ x: 0, y: 0 }, { x: 100, y: 0 }, { x: 100, y: 50 }, { x: 300, y: 50 }];
    expect(roundedPath(pts)).toBe('M 0,0 L 92,0 Q 100,0 100,8 L 100,42 Q 100,50 108,50 L 300,50');
    expect(labelPoint(pts)).toEqual({ x: 200, y: 50 });
  });
});

describe('curveIsClear', () => {
  it('a curve between neighbours is clear; one over a node in between is not', () => {
    const a = box('a', 0, 0);
    const b = box('b', 300, 0);
    const c = box('c', 600, 0);
    expect(curveIsClear(out(a), inp(b), [])).toBe(true);
    expect(curveIsClear(out(a), inp(c), [b])).toBe(false);
    expect(curveIsClear(out(a), inp(c), [box('low', 300, 400)])).toBe(true);
  });
});
