import { describe, expect, it } from 'vitest';
import { toCanvas } from './canvas';

describe('toCanvas', () => {
  it('turns a YAML projection into laid-out read-only nodes', () => {
    const { nodes, edges } = toCanvas({
      nodes: [
        { id: 'plan', type: 'prompt', data: { label: 'Plan' } },
        { id: 'build', type: 'bash', label: 'Build' },
        { id: 'review', type: 'approval', data: { prompt: 'ok?' } },
      ],
      edges: [
        { source: 'plan', target: 'build' },
        { id: 'x', source: 'build', target: 'review', sourceHandle: 'weird' },
      ],
    });
    expect(nodes.map((n) => [n.id, n.type, n.data.label, n.data.kind])).toEqual([
      ['plan', 'yaml', 'Plan', 'prompt'],
      ['build', 'yaml', 'Build', 'bash'],
      ['review', 'approval', undefined, undefined],
    ]);
    expect(edges.map((e) => [e.id, e.sourceHandle, e.targetHandle])).toEqual([
      ['e1', 'output', 'input'],
      ['x', 'output', null],
    ]);
    // No positions given, so it was laid out left to right.
    expect(nodes[0]!.position.x).toBeLessThan(nodes[1]!.position.x);
    expect(nodes[1]!.position.x).toBeLessThan(nodes[2]!.position.x);
  });

  it('reads the step kind of the server projection (type "yaml", data.kind)', () => {
    const { nodes } = toCanvas({
      nodes: [
        { id: 'fetch', type: 'yaml', position: { x: 0, y: 0 }, data: { label: 'fetch', kind: 'bash', detail: 'echo hi' } },
        { id: 'gate', type: 'yaml', position: { x: 330, y: 0 }, data: { label: 'gate', kind: 'approval', detail: 'Ship it?' } },
        { id: 'odd', type: 'yaml', position: { x: 660, y: 0 }, data: {} },
      ],
      edges: [],
    });
    expect(nodes.map((n) => [n.id, n.type, n.data.kind, n.data.detail])).toEqual([
      ['fetch', 'yaml', 'bash', 'echo hi'],
      ['gate', 'yaml', 'approval', 'Ship it?'],
      ['odd', 'yaml', 'node', undefined],
    ]);
  });

  it('keeps given positions and drops junk', () => {
    const { nodes, edges } = toCanvas({
      nodes: [
        { id: 'a', type: 'start', position: { x: 5, y: 6 } },
        { id: 'b', type: 'agent', position: { x: 50, y: 6 } },
        'junk',
        { id: 'a', type: 'agent' },
      ],
      edges: [{ source: 'a', target: 'missing' }, { source: 'a', target: 'b', sourceHandle: 'output' }],
    });
    expect(nodes.map((n) => [n.id, n.position.x])).toEqual([
      ['a', 5],
      ['b', 50],
    ]);
    expect(edges).toHaveLength(1);
    expect(toCanvas(null)).toEqual({ nodes: [], edges: [] });
  });
});
