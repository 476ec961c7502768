import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { connectionProblem } from './connect';
import { normalizeLegacy } from './legacy';
import { GraphShapeError, looksLegacy, parseGraph, toFlowEdge, toFlowNode, toGraph } from './serialize';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8'));

describe('legacy import fallback', () => {
  it.each(['legacy-if-condition.json', 'legacy-input-node.json', 'subagents-tree.json'])(
    '%s becomes the current shape with every edge on a real handle',
    (name) => {
      const raw = fixture(name);
      expect(looksLegacy(raw)).toBe(true);
      const { graph, problems } = normalizeLegacy(raw);
      expect(problems).toEqual([]);
      expect(looksLegacy(graph)).toBe(false);
      // Round-trips through the strict parser.
      expect(parseGraph(JSON.parse(JSON.stringify(graph)))).toEqual(graph);
      const byId = new Map(graph.nodes.map((n) => [n.id, n]));
      for (const e of graph.edges) {
        expect(connectionProblem(e, byId, []), `${e.id} ${e.sourceHandle}`).toBeNull();
      }
    },
  );

  it('maps if.condition and the true handle', () => {
    const { graph } = normalizeLegacy(fixture('legacy-if-condition.json'));
    const check = graph.nodes.find((n) => n.id === 'check')!;
    expect(check.data).toEqual({ conditions: [{ operator: 'contains', value: 'failed' }] });
    expect(graph.edges.find((e) => e.target === 'triage')?.sourceHandle).toBe('condition-0');
    expect(graph.edges.find((e) => e.target === 'celebrate')?.sourceHandle).toBe('false');
    expect(check.position).toEqual({ x: 200, y: 0 });
  });

  it('maps input nodes to approval nodes', () => {
    const { graph } = normalizeLegacy(fixture('legacy-input-node.json'));
    expect(graph.nodes.find((n) => n.id === 'node_3')?.type).toBe('approval');
  });

  it('fills a missing target handle', () => {
    const { graph } = normalizeLegacy(fixture('subagents-tree.json'));
    const e = graph.edges.find((x) => x.target === 'museums')!;
    expect(e).toMatchObject({ sourceHandle: 'subagent', targetHandle: 'input' });
  });

  it('reports connections to missing nodes instead of failing', () => {
    const r = normalizeLegacy({ nodes: [{ id: 'a', type: 'start', x: 0, y: 0 }], connections: [{ source: 'a', target: 'b' }] });
    expect(r.graph.edges).toEqual([]);
    expect(r.problems[0]).toContain('missing node');
  });
});

describe('parseGraph', () => {
  it.each([
    [null, 'JSON object'],
    [{ nodes: 3 }, 'graph.nodes'],
    [{ nodes: [{ type: 'start', position: { x: 0, y: 0 } }] }, 'nodes[0].id'],
    [{ nodes: [{ id: 'a', type: 'start' }] }, 'node a: position'],
    [{ nodes: [{ id: 'a', type: 'start', position: {}, data: [] }] }, 'node a: data'],
    [{ nodes: [], edges: [{ source: 1 }] }, 'edges[0]'],
  ])('rejects %j naming the problem', (raw, msg) => {
    expect(() => parseGraph(raw)).toThrow(GraphShapeError);
    expect(() => parseGraph(raw)).toThrow(msg);
  });

  it('keeps unknown data fields and gives edges ids', () => {
    const g = parseGraph({
      nodes: [{ id: 'a', type: 'agent', position: { x: 1, y: 2 }, data: { agentName: 'A', custom: { k: 1 } } }],
      edges: [{ source: 'a', target: 'a' }],
    });
    expect(g.nodes[0]!.data).toEqual({ agentName: 'A', custom: { k: 1 } });
    expect(g.edges[0]!.id).toBe('e1');
  });
});

describe('toGraph', () => {
  it('strips view state and keeps exactly the stored shape', () => {
    const node = { ...toFlowNode({ id: 'a', type: 'agent', position: { x: 1.4, y: 2.6 }, data: { agentName: 'A' } }), selected: true, measured: { width: 10, height: 10 }, dragging: false };
    const edge = { ...toFlowEdge({ id: 'e1', source: 'a', target: 'b', sourceHandle: 'subagent', targetHandle: 'input' }), selected: true };
    expect(edge.type).toBe('subagent');
    expect(toGraph([node], [edge])).toEqual({
      nodes: [{ id: 'a', type: 'agent', position: { x: 1, y: 3 }, data: { agentName: 'A' } }],
      edges: [{ id: 'e1', source: 'a', target: 'b', sourceHandle: 'subagent', targetHandle: 'input' }],
    });
  });
});
