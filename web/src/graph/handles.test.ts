import { describe, expect, it } from 'vitest';
import { conditionHandleId, conditionIndex, conditionLabel, hasInputHandle, isSubagentEdge, sourceHandles } from './handles';

const ids = (n: Parameters<typeof sourceHandles>[0]) => sourceHandles(n).map((h) => h.id);

describe('sourceHandles', () => {
  it.each([
    ['start', {}, ['output']],
    ['agent', {}, ['output']],
    ['agent', { tools: { subagents: false } }, ['output']],
    ['agent', { tools: { subagents: true } }, ['output', 'subagent']],
    ['approval', {}, ['approve', 'reject']],
    ['if', {}, ['false']],
    [
      'if',
      { conditions: [{ operator: 'equal', value: 'a' }, { operator: 'contains', value: 'b' }] },
      ['condition-0', 'condition-1', 'false'],
    ],
    ['bash', {}, ['output']],
  ])('%s %j → %j', (type, data, want) => {
    expect(ids({ type, data })).toEqual(want);
  });

  it('labels if outputs with their conditions and the else branch', () => {
    const hs = sourceHandles({ type: 'if', data: { conditions: [{ operator: 'contains', value: 'fail' }] } });
    expect(hs.map((h) => h.label)).toEqual(['contains "fail"', 'else']);
  });

  it('marks the subagent handle as its own kind', () => {
    const hs = sourceHandles({ type: 'agent', data: { tools: { subagents: true } } });
    expect(hs.find((h) => h.id === 'subagent')?.kind).toBe('subagent');
    expect(hs.find((h) => h.id === 'output')?.kind).toBe('exec');
  });

  it('tolerates malformed conditions', () => {
    expect(ids({ type: 'if', data: { conditions: 'nope' } })).toEqual(['false']);
    const hs = sourceHandles({ type: 'if', data: { conditions: [null, { operator: 'weird', value: 3 }] } });
    expect(hs.map((h) => h.label)).toEqual(['= (empty)', '= (empty)', 'else']);
  });
});

describe('condition helpers', () => {
  it('formats labels and clips long values', () => {
    expect(conditionLabel({ operator: 'equal', value: 'yes' })).toBe('= "yes"');
    expect(conditionLabel({ operator: 'contains', value: '' })).toBe('contains (empty)');
    const long = conditionLabel({ operator: 'equal', value: 'x'.repeat(100) });
    expect(long.length).toBeLessThan(40);
    expect(long).toContain('…');
  });
  it('round-trips handle ids', () => {
    expect(conditionIndex(conditionHandleId(7))).toBe(7);
    expect(conditionIndex('false')).toBe(-1);
    expect(conditionIndex(null)).toBe(-1);
    expect(conditionIndex('condition-x')).toBe(-1);
  });
  it('knows which nodes take input and which edges are subagent edges', () => {
    expect(hasInputHandle({ type: 'start' })).toBe(false);
    expect(hasInputHandle({ type: 'agent' })).toBe(true);
    expect(isSubagentEdge({ sourceHandle: 'subagent' })).toBe(true);
    expect(isSubagentEdge({ sourceHandle: 'output' })).toBe(false);
  });
});
