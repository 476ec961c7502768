import { describe, expect, it } from 'vitest';
import { toCanvas } from './canvas';
import { GROUP_NODE_TYPE, groupBoxes, isGroupNodeId, isIncluded, withGroups } from './groups';

// The server's projection of a workflow that includes a block (yamlflow's CanvasOf).
const projection = {
  nodes: [
    { id: 'first', type: 'yaml', position: { x: 0, y: 0 }, data: { label: 'first', kind: 'bash' } },
    { id: 'review__start', type: 'yaml', position: { x: 300, y: 0 }, data: { label: 'start', kind: 'bash', group: 'review', groupLabel: 'block' } },
    { id: 'review__mid', type: 'yaml', position: { x: 600, y: 100 }, data: { label: 'mid', kind: 'prompt', group: 'review', groupLabel: 'block' } },
    { id: 'again__start', type: 'yaml', position: { x: 900, y: 0 }, data: { label: 'start', kind: 'bash', group: 'again' } },
  ],
  edges: [{ id: 'first->review__start', source: 'first', target: 'review__start' }],
};

describe('include groups', () => {
  it('keeps group and groupLabel on projected nodes', () => {
    const { nodes } = toCanvas(projection);
    expect(nodes.filter(isIncluded).map((n) => [n.id, n.data.group, n.data.groupLabel])).toEqual([
      ['review__start', 'review', 'block'],
      ['review__mid', 'review', 'block'],
      ['again__start', 'again', undefined],
    ]);
  });

  it('draws one box per group around its members, behind them', () => {
    const { nodes } = toCanvas(projection);
    // React Flow has measured two of them.
    nodes[1] = { ...nodes[1]!, measured: { width: 220, height: 60 } };
    nodes[2] = { ...nodes[2]!, measured: { width: 200, height: 100 } };
    const boxes = groupBoxes(nodes);
    expect(boxes.map((b) => [b.id, b.type, b.data])).toEqual([
      ['group:review', GROUP_NODE_TYPE, { group: 'review', label: 'block', members: 2 }],
      ['group:again', GROUP_NODE_TYPE, { group: 'again', label: 'again', members: 1 }],
    ]);
    const review = boxes[0]!;
    // x 300..800, y 0..200, padded 18 and a 24 px label band.
    expect(review.position).toEqual({ x: 282, y: -42 });
    expect([review.width, review.height]).toEqual([536, 260]);
    expect(review).toMatchObject({ selectable: false, draggable: false, connectable: false, zIndex: -1 });
    expect(isGroupNodeId(review.id)).toBe(true);
  });

  it('adds nothing to a canvas without includes', () => {
    const nodes = toCanvas({ nodes: [projection.nodes[0]], edges: [] }).nodes;
    expect(withGroups(nodes)).toBe(nodes);
    const all = toCanvas(projection).nodes;
    expect(withGroups(all).map((n) => n.id)).toEqual(['group:review', 'group:again', ...all.map((n) => n.id)]);
  });
});
