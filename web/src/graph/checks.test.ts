import { describe, expect, it } from 'vitest';
import { approvalName, endlessLoops, humanMessage, lastRejection } from './checks';

const node = (id: string, type: string, data: Record<string, unknown> = {}) => ({ id, type, data });
const edge = (id: string, source: string, target: string, sourceHandle = 'output') => ({ id, source, target, sourceHandle });

describe('endlessLoops', () => {
  const nodes = [
    node('n1', 'start'),
    node('n2', 'agent', { agentName: 'Writer' }),
    node('n3', 'agent', { agentName: 'Critic' }),
    node('n4', 'if'),
    node('n5', 'approval'),
  ];
  it('flags an agent → agent loop that nothing can leave', () => {
    const p = endlessLoops(nodes, [edge('e1', 'n1', 'n2'), edge('e2', 'n2', 'n3'), edge('e3', 'n3', 'n2')]);
    expect(p).toEqual([
      expect.objectContaining({ code: 'endless_loop', severity: 'warning', nodeId: 'n2', message: expect.stringMatching(/^“Writer” → “Critic” → “Writer” loops with no if or approval node/) }),
    ]);
    expect(p[0]!.message).toContain('25 times');
  });
  it('a loop through an if node or an approval can end: no warning', () => {
    expect(endlessLoops(nodes, [edge('e2', 'n2', 'n3'), edge('e3', 'n3', 'n4'), edge('e4', 'n4', 'n2', 'condition-0')])).toEqual([]);
    expect(endlessLoops(nodes, [edge('e2', 'n2', 'n5'), edge('e3', 'n5', 'n2', 'reject')])).toEqual([]);
  });
  it('subagent edges are calls, not loops; a self-loop is one', () => {
    expect(endlessLoops(nodes, [edge('e2', 'n2', 'n3', 'subagent'), edge('e3', 'n3', 'n2')])).toEqual([]);
    expect(endlessLoops(nodes, [edge('e2', 'n2', 'n2')])).toHaveLength(1);
  });
});

describe('humanMessage', () => {
  const nodes = [node('n2', 'if'), node('n3', 'agent', { agentName: 'Writer' }), node('n4', 'agent')];
  const edges = [edge('e6', 'n2', 'n3', 'condition-0')];
  it('names nodes and edges as the canvas shows them', () => {
    expect(humanMessage('edge "e6" (n2 -> n3) names target node "n3", which does not exist', nodes, edges)).toBe(
      'the edge if node n2 → “Writer” names target “Writer”, which does not exist',
    );
    expect(humanMessage('agent node "n4" has no prompt', nodes, edges)).toBe('node n4 has no prompt');
    expect(humanMessage('edge "e6" leaves if node "n2" through handle "condition-3", which it does not have', nodes, edges)).toBe(
      'the edge if node n2 → “Writer” leaves if node n2 through the output of condition 4, which it does not have',
    );
  });
  it('counts conditions from 1 like the inspector', () => {
    expect(humanMessage('if node "n2": condition 2 (handle condition-1) has a blank value and never matches', nodes, edges)).toBe(
      'if node n2: condition 2 has a blank value and never matches',
    );
  });
});

describe('approvals', () => {
  const nodes = [node('n2', 'agent', { agentName: 'Writer' }), node('n3', 'approval'), node('review', 'yaml', { label: 'review' })];
  const edges = [edge('e1', 'n2', 'n3')];
  it('an approval node is named by what it approves; others by their name', () => {
    expect(approvalName(nodes, edges, 'n3')).toBe('approval of “Writer”');
    expect(approvalName(nodes, edges, 'n2')).toBe('“Writer”');
    expect(approvalName(nodes, edges, 'review')).toBe('step review');
    expect(approvalName([], [], 'gone')).toBe('gone');
  });
  it('an approval after if nodes approves what the node before them wrote', () => {
    const ns = [node('w', 'agent', { agentName: 'Writer' }), node('c1', 'if'), node('c2', 'if'), node('a', 'approval'), node('loop', 'if')];
    const es = [edge('e1', 'w', 'c1'), edge('e2', 'c1', 'c2', 'condition-0'), edge('e3', 'c2', 'a', 'condition-0'), edge('e4', 'loop', 'loop')];
    expect(approvalName(ns, es, 'a')).toBe('approval of “Writer”');
    // An if with nothing before it, or an if loop, names the if itself.
    expect(approvalName(ns, [edge('x', 'c1', 'a')], 'a')).toBe('approval of if node c1');
    expect(approvalName(ns, [edge('x', 'loop', 'a'), edge('e4', 'loop', 'loop')], 'a')).toBe('approval of if node loop');
  });
  it('the last rejection note of a node, until an approval', () => {
    const ev = (nodeId: string, data: Record<string, unknown>) => ({ nodeId, type: 'input_received', data });
    expect(lastRejection([ev('n3', { decision: 'reject', note: 'shorter' }), ev('x', { decision: 'approve' })], 'n3')).toBe('shorter');
    expect(lastRejection([ev('n3', { decision: 'reject', note: 'a' }), ev('n3', { decision: 'approve' })], 'n3')).toBeNull();
    expect(lastRejection([ev('n3', { decision: 'reject', note: 'tool', callId: 'c' })], 'n3')).toBeNull();
  });
});
