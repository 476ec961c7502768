import { describe, expect, it } from 'vitest';
import { copyName, copySelection, pasteGraph, pasteOffset } from './clipboard';
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

  it('offsets a paste, and a second paste of the same clipboard again (never on top of the first)', () => {
    const c = copySelection(nodes, edges)!;
    const first = pasteOffset(c, nodes);
    expect(first).toEqual({ x: 40, y: 40 });
    const r1 = pasteGraph(c, ['n1', 'n2', 'n3'], ['e1', 'e2'], first);
    const after1 = [...nodes, ...r1.nodes];
    const second = pasteOffset(c, after1);
    expect(second).toEqual({ x: 80, y: 80 });
    const r2 = pasteGraph(c, after1.map((n) => n.id), ['e1', 'e2', ...r1.edges.map((e) => e.id)], second);
    const all = [...after1, ...r2.nodes].map((n) => `${n.position.x},${n.position.y}`);
    expect(new Set(all).size).toBe(all.length);
    // A paste where the first copy was moved away may use the first spot again.
    const moved = [...nodes, ...r1.nodes.map((n) => ({ ...n, position: { x: n.position.x + 500, y: n.position.y } }))];
    expect(pasteOffset(c, moved)).toEqual({ x: 40, y: 40 });
  });
});

describe('copyName', () => {
  it('a pasted agent gets a name no other node has', () => {
    expect(copyName('Writer', new Set(['Writer']))).toBe('Writer (copy)');
    expect(copyName('Writer', new Set(['Writer', 'Writer (copy)']))).toBe('Writer (copy 2)');
    expect(copyName('Writer (copy)', new Set(['Writer', 'Writer (copy)']))).toBe('Writer (copy 2)');
  });
  it('pasteGraph renames copied agents', () => {
    const clip = { nodes: [{ id: 'n2', type: 'agent', position: { x: 0, y: 0 }, data: { agentName: 'Writer' } }], edges: [] };
    const once = pasteGraph(clip, ['n1', 'n2'], [], { x: 40, y: 40 }, ['Writer']);
    expect(once.nodes[0]!.data.agentName).toBe('Writer (copy)');
    const twice = pasteGraph(clip, ['n1', 'n2', 'n3'], [], { x: 80, y: 80 }, ['Writer', 'Writer (copy)']);
    expect(twice.nodes[0]!.data.agentName).toBe('Writer (copy 2)');
  });
});
