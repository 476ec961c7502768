import { describe, expect, it } from 'vitest';
import { copySelection, pasteGraph } from './clipboard';
import type { FlowEdge, FlowNode } from './types';

const nodes: FlowNode[] = [
  { id: 'n1', type: 'start', position: { x: 0, y: 0 }, data: {}, selected: true },
  { id: 'n2', type: 'agent', position: { x: 100, y: 0 }, data: { tools: { subagents: true } }, selected: true },
  { id: 'n3', type: 'agent', position: { x: 200, y: 0 }, data: {} },
];
const edges: FlowEdge[] = [
  { id: 'e1', source: 'n1', target: 'n2', sourceHandle: 'output', targetHandle: 'input' },
  { id: 'e2', source: 'n2', target: 'n3', sourceHandle: 'subagent', targetHandle: 'input' },
];

describe('copy/paste', () => {
  it('copies selected nodes and only the edges between them', () => {
    const c = copySelection(nodes, edges)!;
    expect(c.nodes.map((n) => n.id)).toEqual(['n1', 'n2']);
    expect(c.edges.map((e) => e.id)).toEqual(['e1']);
  });

  it('returns null with nothing selected', () => {
    expect(copySelection(nodes.map((n) => ({ ...n, selected: false })), edges)).toBeNull();
  });

  it('pastes with fresh ids, remapped edges, offset and deep-copied data', () => {
    const c = copySelection(nodes, edges)!;
    const r = pasteGraph(c, ['n1', 'n2', 'n3'], ['e1', 'e2'], { x: 40, y: 40 });
    expect(r.nodes.map((n) => n.id)).toEqual(['n4', 'n5']);
    expect(r.nodes[1]!.position).toEqual({ x: 140, y: 40 });
    expect(r.nodes.every((n) => n.selected)).toBe(true);
    expect(r.edges).toEqual([
      { id: 'e3', source: 'n4', target: 'n5', sourceHandle: 'output', targetHandle: 'input', type: 'exec' },
    ]);
    (r.nodes[1]!.data.tools as { subagents: boolean }).subagents = false;
    expect((nodes[1]!.data.tools as { subagents: boolean }).subagents).toBe(true);
  });
});
