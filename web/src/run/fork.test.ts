import { describe, expect, it } from 'vitest';
import { applyEvents, emptyRunLog } from './reducer';
import { forkBlocker, forkRequest, parseForkData, reusedNodes, upstreamOf } from './fork';

const n = (id: string, type = 'agent', data: Record<string, unknown> = {}) => ({ id, type, data });
const e = (source: string, target: string, sourceHandle = 'output') => ({ source, target, sourceHandle });

describe('upstreamOf', () => {
  it.each([
    { name: 'a chain', edges: [e('s', 'a'), e('a', 'b'), e('b', 'c')], from: 'b', want: ['a', 's'] },
    { name: 'the first node has nothing upstream', edges: [e('s', 'a'), e('a', 'b')], from: 's', want: [] },
    { name: 'a join takes both branches', edges: [e('s', 'a'), e('s', 'b'), e('a', 'j'), e('b', 'j')], from: 'j', want: ['a', 'b', 's'] },
    { name: 'a sibling branch is not upstream', edges: [e('s', 'a'), e('s', 'b'), e('a', 'c')], from: 'c', want: ['a', 's'] },
    // A loop through the fork point: the loop's nodes run again after it.
    { name: 'a loop through the node', edges: [e('s', 'w'), e('w', 'r'), e('r', 'x', 'reject'), e('x', 'r'), e('r', 'p', 'approve')], from: 'r', want: ['s', 'w'] },
    { name: 'subagent edges are calls, not steps', edges: [e('s', 'a'), e('a', 'sub', 'subagent'), e('a', 'b')], from: 'b', want: ['a', 's'] },
  ])('$name', ({ edges, from, want }) => {
    expect([...upstreamOf(edges, from)].sort()).toEqual(want);
  });
});

describe('reusedNodes', () => {
  const nodes = [n('start', 'start'), n('a1', 'agent', { agentName: 'Writer' }), n('skip', 'agent'), n('a2', 'agent', { agentName: 'Critic' }), n('after')];
  const edges = [e('start', 'a1'), e('a1', 'a2'), e('start', 'skip'), e('skip', 'a2'), e('a2', 'after')];
  const run = {
    outputs: { start: 'topic', a1: 'echo: topic', a2: 'echo: echo: topic', after: 'x' },
    nodes: [
      { nodeId: 'start', status: 'completed' as const, output: 'topic', visits: 1, attempts: 1 },
      { nodeId: 'a1', status: 'completed' as const, output: 'echo: topic', visits: 1, attempts: 1 },
      { nodeId: 'skip', status: 'skipped' as const, visits: 0, attempts: 0 },
    ],
  };
  it('lists the completed upstream nodes in graph order, named', () => {
    expect(reusedNodes(run, nodes, edges, 'a2')).toEqual([
      { id: 'start', name: 'start node start', output: 'topic' },
      { id: 'a1', name: '“Writer”', output: 'echo: topic' },
    ]);
  });
  it('is empty from the first node', () => {
    expect(reusedNodes(run, nodes, edges, 'start')).toEqual([]);
  });
  it('keeps an empty output (a YAML step that printed nothing)', () => {
    expect(reusedNodes({ outputs: { start: '' } }, nodes, edges, 'a1')).toEqual([{ id: 'start', name: 'start node start', output: '' }]);
  });
});

describe('forkRequest', () => {
  const reused = [{ id: 'a1', name: 'Writer', output: 'stored' }];
  it.each([
    { name: 'no edit', edit: null, want: { nodeId: 'a2' } },
    { name: 'an edited output is pinned', edit: { id: 'a1', text: 'mine' }, want: { nodeId: 'a2', pinned: { a1: 'mine' } } },
    { name: 'an unchanged output is not pinned', edit: { id: 'a1', text: 'stored' }, want: { nodeId: 'a2' } },
    { name: 'an emptied output is pinned', edit: { id: 'a1', text: '' }, want: { nodeId: 'a2', pinned: { a1: '' } } },
  ])('$name', ({ edit, want }) => {
    expect(forkRequest('a2', reused, edit)).toEqual(want);
  });
});

describe('forkBlocker', () => {
  it.each(['completed', 'failed', 'cancelled'])('%s runs may be forked', (s) => expect(forkBlocker(s)).toBe(''));
  it.each([
    ['running', /still running/],
    ['pending', /still running/],
    ['paused', /paused/],
    ['interrupted', /interrupted/],
  ])('%s runs may not, and it says why', (s, re) => expect(forkBlocker(s)).toMatch(re));
});

describe('a forked run in the reducer', () => {
  const ev = (seq: number, nodeId: string, type: string, data: Record<string, unknown> | null = null) => ({
    seq,
    runId: 'r2',
    nodeId,
    type,
    content: '',
    timestamp: '2026-01-01T00:00:00Z',
    data,
  });
  it('reads run_forked and marks the reused nodes (edited or not)', () => {
    const log = applyEvents(emptyRunLog(), [
      ev(1, 'system', 'run_forked', { parentRunId: 'r1', fromNode: 'a2', reused: { start: { output: 'topic' }, a1: { output: 'mine', edited: true } } }),
      ev(2, 'start', 'step_start', { type: 'start', visit: 1, reused: true }),
      ev(3, 'start', 'step_end', { status: 'completed', output: 'topic', visit: 1 }),
      ev(4, 'a1', 'step_start', { type: 'agent', visit: 1, reused: true }),
      ev(5, 'a1', 'step_end', { status: 'completed', output: 'mine', visit: 1 }),
      ev(6, 'a2', 'step_start', { type: 'agent', visit: 1 }),
    ]);
    expect(log.fork).toEqual({ parentRunId: 'r1', fromNode: 'a2', reused: { start: { edited: false }, a1: { edited: true } } });
    expect(log.nodes.start?.reused).toBe(true);
    expect(log.nodes.a1?.reused).toBe(true);
    expect(log.nodes.a1?.output).toBe('mine');
    expect(log.nodes.a2?.reused).toBe(false);
    expect(log.lines.map((l) => l.type)[0]).toBe('run_forked');
  });
  it('a later visit of a reused node is new work', () => {
    const log = applyEvents(emptyRunLog(), [ev(1, 'a1', 'step_start', { visit: 1, reused: true }), ev(2, 'a1', 'step_start', { visit: 2 })]);
    expect(log.nodes.a1?.reused).toBe(false);
  });
  it('ignores malformed fork data', () => {
    expect(parseForkData({ parentRunId: 1 })).toBeNull();
    expect(parseForkData({ parentRunId: 'r', fromNode: 'n', reused: 'x' })).toEqual({ parentRunId: 'r', fromNode: 'n', reused: {} });
  });
});
