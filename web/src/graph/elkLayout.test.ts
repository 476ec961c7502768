import { describe, expect, it } from 'vitest';
import { backEdgePath, isBackEdge } from '../nodes/edges';
import { elkLayout } from './elkLayout';

const box = { width: 240, height: 110 };

describe('elkLayout', () => {
  it('lays a revise loop out left to right without overlaps', async () => {
    const nodes = ['start', 'writer', 'review', 'publish', 'reviser'].map((id) => ({ id, ...box }));
    const edges = [
      { source: 'start', target: 'writer' },
      { source: 'writer', target: 'review' },
      { source: 'review', target: 'publish' },
      { source: 'review', target: 'reviser' },
      { source: 'reviser', target: 'review' }, // the loop back
    ];
    const pos = await elkLayout(nodes, edges);
    const x = (id: string) => pos.get(id)!.x;
    expect(x('start')).toBeLessThan(x('writer'));
    expect(x('writer')).toBeLessThan(x('review'));
    expect(x('review')).toBeLessThan(x('publish'));
    expect(x('review')).toBeLessThan(x('reviser'));
    for (const a of nodes) {
      for (const b of nodes) {
        if (a.id >= b.id) continue;
        const pa = pos.get(a.id)!;
        const pb = pos.get(b.id)!;
        const apart = pa.x + box.width <= pb.x || pb.x + box.width <= pa.x || pa.y + box.height <= pb.y || pb.y + box.height <= pa.y;
        expect(apart, `${a.id} and ${b.id} overlap`).toBe(true);
      }
    }
  });

  it('places every node of a graph with stray edges', async () => {
    const pos = await elkLayout(
      [{ id: 'a' }, { id: 'b' }],
      [
        { source: 'a', target: 'a' },
        { source: 'a', target: 'ghost' },
      ],
    );
    expect([...pos.keys()].sort()).toEqual(['a', 'b']);
  });
});

describe('back edges', () => {
  it('are the edges that run right to left', () => {
    expect(isBackEdge(500, 100)).toBe(true);
    expect(isBackEdge(100, 500)).toBe(false);
  });
  it('route below the lowest node in the way, into the target from the left', () => {
    const d = backEdgePath(500, 100, 100, 120, 300);
    const ys = [...d.matchAll(/-?\d+(?:\.\d+)?,(-?\d+(?:\.\d+)?)/g)].map((m) => Number(m[1]));
    expect(Math.max(...ys)).toBeGreaterThan(300);
    expect(d.startsWith('M 500,100')).toBe(true);
    expect(d.endsWith('L 100,120')).toBe(true);
  });
});
