import { describe, expect, it } from 'vitest';
import { connectionProblem } from './connect';

const nodes = new Map(
  [
    { id: 's', type: 'start', data: {} },
    { id: 'a', type: 'agent', data: { tools: { subagents: true } } },
    { id: 'b', type: 'agent', data: {} },
    { id: 'i', type: 'if', data: { conditions: [{ operator: 'equal', value: 'x' }] } },
    { id: 'p', type: 'approval', data: {} },
  ].map((n) => [n.id, n]),
);
const edges = [{ source: 's', target: 'a', sourceHandle: 'output', targetHandle: 'input' }];

describe('connectionProblem', () => {
  it.each([
    [{ source: 'a', target: 'b', sourceHandle: 'output', targetHandle: 'input' }, null],
    [{ source: 'a', target: 'b', sourceHandle: 'subagent', targetHandle: 'input' }, null],
    [{ source: 'i', target: 'b', sourceHandle: 'condition-0', targetHandle: 'input' }, null],
    [{ source: 'i', target: 'b', sourceHandle: 'false', targetHandle: 'input' }, null],
    [{ source: 'p', target: 'b', sourceHandle: 'reject', targetHandle: 'input' }, null],
    [{ source: 's', target: 'a', sourceHandle: 'output', targetHandle: 'input' }, 'already connected'],
    [{ source: 'a', target: 'a', sourceHandle: 'output', targetHandle: 'input' }, 'itself'],
    [{ source: 'a', target: 's', sourceHandle: 'output', targetHandle: 'input' }, 'no input'],
    [{ source: 'b', target: 'a', sourceHandle: 'subagent', targetHandle: 'input' }, 'no output'],
    [{ source: 'i', target: 'b', sourceHandle: 'condition-1', targetHandle: 'input' }, 'no output'],
    [{ source: 'a', target: 'p', sourceHandle: 'subagent', targetHandle: 'input' }, 'must be agent'],
    [{ source: 'a', target: 'b', sourceHandle: 'output', targetHandle: 'other' }, 'input handle'],
    [{ source: null, target: 'b', sourceHandle: 'output', targetHandle: 'input' }, 'incomplete'],
    [{ source: 'zz', target: 'b', sourceHandle: 'output', targetHandle: 'input' }, 'unknown node'],
  ])('%j → %s', (c, want) => {
    const got = connectionProblem(c, nodes, edges);
    if (want === null) expect(got).toBeNull();
    else expect(got).toContain(want);
  });
});
