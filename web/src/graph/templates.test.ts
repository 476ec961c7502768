import { describe, expect, it } from 'vitest';
import { toCanvas } from './canvas';
import { connectionProblem } from './connect';
import { isSubagentEdge } from './handles';
import { starterGraph, TEMPLATES } from './templates';
import { isEditableType, subagentsOn, type Graph } from './types';

/**
 * The editor's own checks on a graph (the server's validation, the source of
 * truth, runs on the same files in TestUITemplatesValidate): every edge is one
 * the canvas would let a person draw, there is one start, and every node runs
 * (reached from the start by execution edges, or called as a subagent).
 */
function uiProblems(g: Graph): string[] {
  const out: string[] = [];
  const ids = new Set<string>();
  for (const n of g.nodes) {
    if (ids.has(n.id)) out.push(`duplicate node ${n.id}`);
    ids.add(n.id);
    if (!isEditableType(n.type)) out.push(`node ${n.id}: type ${n.type} is not editable`);
  }
  const byId = new Map(g.nodes.map((n) => [n.id, n]));
  const starts = g.nodes.filter((n) => n.type === 'start');
  if (starts.length !== 1) out.push(`${starts.length} start nodes`);
  g.edges.forEach((e, i) => {
    const others = g.edges.filter((_, j) => j !== i);
    const p = connectionProblem(e, byId, others);
    if (p) out.push(`edge ${e.id}: ${p}`);
    if (isSubagentEdge(e) && !subagentsOn(byId.get(e.source) ?? { data: {} })) out.push(`edge ${e.id}: subagents off`);
  });
  const reached = new Set<string>(starts.map((s) => s.id));
  for (let changed = true; changed; ) {
    changed = false;
    for (const e of g.edges) {
      if (reached.has(e.source) && !reached.has(e.target)) {
        reached.add(e.target);
        changed = true;
      }
    }
  }
  for (const n of g.nodes) if (!reached.has(n.id)) out.push(`node ${n.id} never runs`);
  // Each if condition and approval decision leads somewhere.
  for (const n of g.nodes) {
    if (n.type !== 'if') continue;
    if (!g.edges.some((e) => e.source === n.id)) out.push(`if ${n.id} has no branch`);
  }
  return out;
}

describe('templates', () => {
  const graphs = [
    { id: 'starter', graph: starterGraph() },
    ...TEMPLATES.flatMap((t) => (t.kind === 'graph' ? [{ id: t.id, graph: t.graph }] : [])),
  ];

  it('offers the AgentFlow review loop, a router, a lead with subagents and a YAML DAG', () => {
    expect(TEMPLATES.map((t) => t.id)).toEqual(['review-loop', 'router', 'lead-subagents', 'yaml-review']);
    const types = (id: string) => graphs.find((g) => g.id === id)!.graph.nodes.map((n) => n.type);
    expect(types('review-loop')).toContain('approval');
    expect(types('router')).toContain('if');
    const lead = graphs.find((g) => g.id === 'lead-subagents')!.graph;
    expect(lead.edges.filter(isSubagentEdge)).toHaveLength(2);
    const review = graphs.find((g) => g.id === 'review-loop')!.graph;
    expect(review.edges.map((e) => `${e.source}.${e.sourceHandle}>${e.target}`)).toContain('review.reject>writer');
  });

  it.each(graphs)('$id passes the editor checks and opens on the canvas unchanged', ({ graph }) => {
    expect(uiProblems(graph)).toEqual([]);
    const c = toCanvas(graph);
    expect(c.nodes.map((n) => n.id)).toEqual(graph.nodes.map((n) => n.id));
    expect(c.edges.map((e) => e.id)).toEqual(graph.edges.map((e) => e.id));
  });

  it('the YAML template is a DAG text with nodes and a file name', () => {
    const y = TEMPLATES.find((t) => t.kind === 'yaml');
    if (!y || y.kind !== 'yaml') throw new Error('no YAML template');
    expect(y.fileName).toMatch(/\.yaml$/);
    expect(y.yaml).toMatch(/^name: /m);
    expect(y.yaml).toMatch(/depends_on: \[style, risks\]/);
  });

  it('the starter is a fresh copy every time', () => {
    const a = starterGraph();
    a.nodes[0]!.data.initialInput = 'changed';
    expect(starterGraph().nodes[0]!.data.initialInput).toBe('');
  });
});
