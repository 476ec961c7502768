import { beforeEach, describe, expect, it } from 'vitest';
import { toGraph } from '../graph/serialize';
import { TEMPLATES } from '../graph/templates';
import type { Graph } from '../graph/types';
import { isDirty, resetEditorStore, useEditor } from './editor';

const st = () => useEditor.getState();

const onlyStart: Graph = { nodes: [{ id: 'n1', type: 'start', position: { x: 0, y: 0 }, data: {} }], edges: [] };

beforeEach(() => {
  resetEditorStore();
  st().newWorkflow({ graph: onlyStart });
});

describe('editor store', () => {
  it('a new workflow opens clean with the starter: a start node wired to an agent', () => {
    st().newWorkflow();
    expect(st().nodes.map((n) => n.type)).toEqual(['start', 'agent']);
    expect(st().edges).toEqual([expect.objectContaining({ source: 'n1', target: 'n2', sourceHandle: 'output', type: 'exec' })]);
    expect(isDirty(st())).toBe(false);
    expect(st().workflowId).toBeNull();
  });

  it('a template opens as a new unsaved workflow, deep-copied', () => {
    const t = TEMPLATES.find((x) => x.kind === 'graph')!;
    if (t.kind !== 'graph') throw new Error('no graph template');
    st().newWorkflow({ graph: t.graph, name: t.name, unsaved: true });
    expect(st().name).toBe(t.name);
    expect(st().nodes).toHaveLength(t.graph.nodes.length);
    expect(isDirty(st())).toBe(true);
    st().updateNodeData(st().nodes[1]!.id, { agentName: 'Changed' }, 'agentName');
    expect(JSON.stringify(t.graph)).not.toContain('Changed');
  });

  it('pasting the same clipboard twice offsets each copy', () => {
    st().selectAll();
    st().copy();
    st().paste();
    st().paste();
    const spots = st().nodes.map((n) => `${n.position.x},${n.position.y}`);
    expect(spots).toEqual(['0,0', '40,40', '80,80']);
  });

  it('adds, connects, undoes and redoes; undoing to the saved state is clean again', () => {
    const a = st().addNode('agent', { x: 300, y: 0 });
    expect(isDirty(st())).toBe(true);
    st().connect({ source: 'n1', target: a, sourceHandle: 'output', targetHandle: 'input' });
    expect(st().edges).toHaveLength(1);
    expect(st().edges[0]).toMatchObject({ type: 'exec', sourceHandle: 'output', targetHandle: 'input' });
    st().undo();
    expect(st().edges).toHaveLength(0);
    st().undo();
    expect(st().nodes).toHaveLength(1);
    expect(isDirty(st())).toBe(false);
    st().redo();
    st().redo();
    expect(st().edges).toHaveLength(1);
    expect(isDirty(st())).toBe(true);
  });

  it('refuses invalid connections', () => {
    const a = st().addNode('agent', { x: 0, y: 0 });
    st().connect({ source: a, target: 'n1', sourceHandle: 'output', targetHandle: 'input' });
    st().connect({ source: a, target: a, sourceHandle: 'output', targetHandle: 'input' });
    expect(st().edges).toHaveLength(0);
  });

  it('makes a whole drag one undo step', () => {
    const pos = (x: number, dragging: boolean) => [{ type: 'position' as const, id: 'n1', position: { x, y: 0 }, dragging }];
    st().onNodesChange(pos(10, true));
    st().onNodesChange(pos(20, true));
    st().onNodesChange(pos(30, false));
    expect(st().nodes[0]!.position.x).toBe(30);
    expect(isDirty(st())).toBe(true);
    st().undo();
    expect(st().nodes[0]!.position.x).toBe(0);
    expect(isDirty(st())).toBe(false);
  });

  it('does not record selection or measurement changes as edits', () => {
    st().onNodesChange([{ type: 'select', id: 'n1', selected: true }]);
    st().onNodesChange([{ type: 'dimensions', id: 'n1', dimensions: { width: 200, height: 80 } }]);
    expect(isDirty(st())).toBe(false);
    expect(st().history.past).toHaveLength(0);
  });

  it('coalesces typing into one undo step per field', () => {
    const a = st().addNode('agent', { x: 0, y: 0 });
    for (const v of ['H', 'He', 'Hel', 'Hell', 'Hello']) st().updateNodeData(a, { agentName: v }, 'agentName');
    expect(st().nodes.find((n) => n.id === a)!.data.agentName).toBe('Hello');
    st().undo();
    expect(st().nodes.find((n) => n.id === a)!.data.agentName).toBe('Agent 1');
  });

  it('turning subagents off removes the subagent edges', () => {
    const lead = st().addNode('agent', { x: 0, y: 0 });
    const helper = st().addNode('agent', { x: 0, y: 200 });
    st().updateNodeData(lead, { tools: { subagents: true } }, 'tools.subagents');
    st().connect({ source: lead, target: helper, sourceHandle: 'subagent', targetHandle: 'input' });
    expect(st().edges.map((e) => e.type)).toEqual(['subagent']);
    st().updateNodeData(lead, { tools: { subagents: false } }, 'tools.subagents');
    expect(st().edges).toHaveLength(0);
  });

  it('deletes the selection with attached edges, and copy/paste duplicates it', () => {
    const a = st().addNode('agent', { x: 100, y: 0 });
    st().connect({ source: 'n1', target: a, sourceHandle: 'output', targetHandle: 'input' });
    st().selectAll();
    expect(st().copy()).toBe(true);
    expect(st().paste()).toBe(true);
    expect(st().nodes).toHaveLength(4);
    expect(st().edges).toHaveLength(2);
    // Pasted nodes are the selection now.
    expect(st().nodes.filter((n) => n.selected).map((n) => n.id)).toEqual(['n3', 'n4']);
    st().deleteSelected();
    expect(st().nodes.map((n) => n.id)).toEqual(['n1', 'n2']);
    expect(st().edges).toHaveLength(1);
  });

  it('edits if conditions and keeps edges on the right branch', () => {
    const i = st().addNode('if', { x: 0, y: 0 });
    const x = st().addNode('agent', { x: 300, y: 0 });
    st().editConditions(i, { kind: 'add', condition: { operator: 'equal', value: 'second' } });
    st().connect({ source: i, target: x, sourceHandle: 'condition-1', targetHandle: 'input' });
    st().editConditions(i, { kind: 'move', from: 1, to: 0 });
    expect(st().edges[0]!.sourceHandle).toBe('condition-0');
    st().undo();
    expect(st().edges[0]!.sourceHandle).toBe('condition-1');
  });

  it('auto-layout moves nodes left to right and is undoable', async () => {
    const a = st().addNode('agent', { x: -500, y: 0 });
    st().connect({ source: 'n1', target: a, sourceHandle: 'output', targetHandle: 'input' });
    await st().autoLayout();
    const g = toGraph(st().nodes, st().edges);
    const x = (id: string) => g.nodes.find((n) => n.id === id)!.position.x;
    expect(x('n1')).toBeLessThan(x(a));
    st().undo();
    expect(st().nodes.find((n) => n.id === a)!.position.x).toBe(-500);
  });

  it('replaces the graph from an import as one undoable step', () => {
    st().replaceGraph({
      nodes: [
        { id: 's', type: 'start', position: { x: 0, y: 0 }, data: {} },
        { id: 'a', type: 'agent', position: { x: 200, y: 0 }, data: { agentName: 'A' } },
      ],
      edges: [{ id: 'e1', source: 's', target: 'a', sourceHandle: 'output', targetHandle: 'input' }],
    });
    expect(st().nodes.map((n) => n.id)).toEqual(['s', 'a']);
    st().undo();
    expect(st().nodes.map((n) => n.id)).toEqual(['n1']);
  });
});
