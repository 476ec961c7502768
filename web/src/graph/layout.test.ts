import { describe, expect, it } from 'vitest';
import { arrangedByElk } from './elkLayout';
import { freeSpot, layeredLayout, needsLayout, nodesOverlap } from './layout';

const n = (id: string) => ({ id, width: 200, height: 100 });

function overlaps(pos: Map<string, { x: number; y: number }>, w = 200, h = 100): boolean {
  const ps = [...pos.values()];
  for (let i = 0; i < ps.length; i++)
    for (let j = i + 1; j < ps.length; j++) {
      const a = ps[i]!;
      const b = ps[j]!;
      if (Math.abs(a.x - b.x) < w && Math.abs(a.y - b.y) < h) return true;
    }
  return false;
}

describe('layeredLayout', () => {
  it('puts each node right of its predecessors', () => {
    const nodes = ['s', 'a', 'b', 'c', 'd'].map(n);
    const edges = [
      { source: 's', target: 'a' },
      { source: 'a', target: 'b' },
      { source: 'a', target: 'c' },
      { source: 'b', target: 'd' },
      { source: 'c', target: 'd' },
      { source: 's', target: 'd' },
    ];
    const pos = layeredLayout(nodes, edges);
    for (const e of edges) expect(pos.get(e.source)!.x).toBeLessThan(pos.get(e.target)!.x);
    expect(pos.get('b')!.x).toBe(pos.get('c')!.x);
    expect(overlaps(pos)).toBe(false);
  });

  it('survives cycles, self loops and dangling edges', () => {
    const nodes = ['a', 'b', 'c'].map(n);
    const pos = layeredLayout(nodes, [
      { source: 'a', target: 'b' },
      { source: 'b', target: 'c' },
      { source: 'c', target: 'a' },
      { source: 'a', target: 'a' },
      { source: 'a', target: 'ghost' },
    ]);
    expect(pos.size).toBe(3);
    expect(pos.get('a')!.x).toBeLessThan(pos.get('b')!.x);
    expect(pos.get('b')!.x).toBeLessThan(pos.get('c')!.x);
  });

  it('lays out disconnected nodes without overlap', () => {
    const pos = layeredLayout(['a', 'b', 'c', 'd'].map(n), []);
    expect(overlaps(pos)).toBe(false);
  });

  it('reduces crossings between two layers', () => {
    // a1→b2, a2→b1 would cross if b kept input order.
    const nodes = [
      { id: 'a1', y: 0 },
      { id: 'a2', y: 100 },
      { id: 'b1', y: 0 },
      { id: 'b2', y: 100 },
    ];
    const pos = layeredLayout(nodes, [
      { source: 'a1', target: 'b2' },
      { source: 'a2', target: 'b1' },
    ]);
    const aAbove = pos.get('a1')!.y < pos.get('a2')!.y;
    const bAbove = pos.get('b2')!.y < pos.get('b1')!.y;
    expect(aAbove).toBe(bAbove);
  });

  it('handles 1,000 nodes', () => {
    const nodes = Array.from({ length: 1000 }, (_, i) => ({ id: `n${i}` }));
    const edges = nodes.slice(1).map((x, i) => ({ source: `n${Math.floor(i / 3)}`, target: x.id }));
    const t = performance.now();
    const pos = layeredLayout(nodes, edges);
    expect(pos.size).toBe(1000);
    // Loose bound; a quadratic blow-up would take far longer.
    expect(performance.now() - t).toBeLessThan(5000);
  });
});

describe('needsLayout', () => {
  it('is true only when all nodes share one spot', () => {
    expect(needsLayout([{ position: { x: 0, y: 0 } }, { position: { x: 0, y: 0 } }])).toBe(true);
    expect(needsLayout([{ position: { x: 0, y: 0 } }, { position: { x: 5, y: 0 } }])).toBe(false);
    expect(needsLayout([{ position: { x: 0, y: 0 } }])).toBe(false);
  });
});

describe('freeSpot', () => {
  it('returns the spot itself when free, else the next free one below', () => {
    expect(freeSpot([], { x: 0, y: 0 })).toEqual({ x: 0, y: 0 });
    const taken = [{ position: { x: 0, y: 0 } }];
    const q = freeSpot(taken, { x: 10, y: 10 });
    // Moved by one cell, vertically (cheaper than sideways).
    expect(q.x).toBe(10);
    expect(Math.abs(q.y - 10)).toBe(134);
    const q2 = freeSpot([...taken, { position: q }], { x: 10, y: 10 });
    expect(q2).not.toEqual(q);
  });

  it('takes spots inside the visible area; with none free there, the nearest free one outside (never on a node)', () => {
    const size = { width: 240, height: 110 };
    const view = { x: -300, y: -200, width: 900, height: 400 };
    // A crowded middle row: the free spot must still be wholly in view.
    const taken = [-264, 0, 264].map((x) => ({ position: { x, y: 0 } }));
    const q = freeSpot(taken, { x: 0, y: 0 }, size, 24, view);
    expect(q.x).toBeGreaterThanOrEqual(view.x);
    expect(q.y).toBeGreaterThanOrEqual(view.y);
    expect(q.x + size.width).toBeLessThanOrEqual(view.x + view.width);
    expect(q.y + size.height).toBeLessThanOrEqual(view.y + view.height);
    // A view too small for any other spot: the nearest free spot beyond it (the palette pans there).
    const out = freeSpot(taken, { x: 0, y: 0 }, size, 24, { x: -10, y: -10, width: 260, height: 130 });
    expect(out).toEqual({ x: 0, y: -134 });
  });

  it('thirty clicks on a full view never stack two nodes on one spot', () => {
    const size = { width: 240, height: 110 };
    const view = { x: 0, y: 0, width: 800, height: 500 };
    const placed: Array<{ position: { x: number; y: number } }> = [];
    for (let i = 0; i < 30; i++) placed.push({ position: freeSpot(placed, { x: 280, y: 195 }, size, 24, view) });
    const spots = new Set(placed.map((p) => `${p.position.x},${p.position.y}`));
    expect(spots.size).toBe(30);
  });
});

describe('overlaps / arranged', () => {
  const at = (id: string, type: string, x: number, y: number) => ({ id, type, position: { x, y } });
  it('finds nodes whose rendered boxes overlap', () => {
    // The legacy fixture: agents 240 px apart, but an approval is 250 px wide.
    expect(nodesOverlap([at('a', 'start', 80, 120), at('b', 'agent', 320, 120), at('c', 'approval', 560, 120), at('d', 'agent', 800, 60)])).toBe(true);
    expect(nodesOverlap([at('a', 'start', 0, 0), at('b', 'agent', 300, 0), at('c', 'agent', 300, 200)])).toBe(false);
    expect(nodesOverlap([])).toBe(false);
  });
  it('lays an imported graph out with ELK so nothing overlaps', async () => {
    const g = {
      nodes: [at('a', 'start', 80, 120), at('b', 'agent', 320, 120), at('c', 'approval', 560, 120), at('d', 'agent', 800, 60), at('e', 'agent', 800, 200)],
      edges: [
        { source: 'a', target: 'b' },
        { source: 'b', target: 'c' },
        { source: 'c', target: 'd' },
        { source: 'c', target: 'e' },
      ],
    };
    const out = await arrangedByElk(g);
    expect(nodesOverlap(out.nodes)).toBe(false);
    expect(out.nodes.map((n) => n.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(out.nodes[0]!.position.x).toBeLessThan(out.nodes[1]!.position.x);
  });
});
