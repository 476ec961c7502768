import { describe, expect, it } from 'vitest';
import { importGraphText } from './importExport';

describe('import', () => {
  it('leaves out edges to missing nodes and lists them', async () => {
    const file = {
      nodes: [
        { id: 's', type: 'start', position: { x: 0, y: 0 }, data: {} },
        { id: 'a', type: 'agent', position: { x: 300, y: 0 }, data: {} },
      ],
      edges: [
        { id: 'e1', source: 's', target: 'a', sourceHandle: 'output', targetHandle: 'input' },
        { id: 'e2', source: 'a', target: 'ghost', sourceHandle: 'output', targetHandle: 'input' },
        { id: 'e3', source: 'nobody', target: 'a', sourceHandle: 'output', targetHandle: 'input' },
      ],
    };
    const r = await importGraphText(JSON.stringify(file));
    expect(r.graph.edges.map((e) => e.id)).toEqual(['e1']);
    expect(r.dropped).toEqual(['e2: a → ghost (no node ghost)', 'e3: nobody → a (no node nobody)']);
    expect(r.notes.join(' ')).toMatch(/Left out 2 edges to missing nodes: e2: a → ghost/);
  });

  it('says nothing when every edge has its nodes', async () => {
    const r = await importGraphText(JSON.stringify({ nodes: [{ id: 's', type: 'start', position: { x: 0, y: 0 } }], edges: [] }));
    expect(r.dropped).toEqual([]);
    expect(r.notes).toEqual([]);
  });
});
