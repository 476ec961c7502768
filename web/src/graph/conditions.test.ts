import { describe, expect, it } from 'vitest';
import { applyConditionEdit } from './conditions';
import { conditionsOf, type FlowEdge } from './types';

const data = {
  conditions: [
    { operator: 'equal', value: 'a' },
    { operator: 'contains', value: 'b' },
    { operator: 'equal', value: 'c' },
  ],
  note: 'kept',
};
const edges: FlowEdge[] = [
  { id: 'e0', source: 'if', target: 'x0', sourceHandle: 'condition-0', targetHandle: 'input' },
  { id: 'e1', source: 'if', target: 'x1', sourceHandle: 'condition-1', targetHandle: 'input' },
  { id: 'e2', source: 'if', target: 'x2', sourceHandle: 'condition-2', targetHandle: 'input' },
  { id: 'ef', source: 'if', target: 'xf', sourceHandle: 'false', targetHandle: 'input' },
  { id: 'other', source: 'zz', target: 'x0', sourceHandle: 'condition-1', targetHandle: 'input' },
];
const wiring = (es: FlowEdge[]) => Object.fromEntries(es.map((e) => [e.id, e.sourceHandle]));

describe('applyConditionEdit', () => {
  it('removing a condition drops its edges and shifts later ones down', () => {
    const r = applyConditionEdit('if', data, edges, { kind: 'remove', index: 1 });
    expect(conditionsOf(r.data).map((c) => c.value)).toEqual(['a', 'c']);
    expect(wiring(r.edges)).toEqual({ e0: 'condition-0', e2: 'condition-1', ef: 'false', other: 'condition-1' });
    expect(r.data.note).toBe('kept');
  });

  it('moving a condition moves its edge with it', () => {
    const r = applyConditionEdit('if', data, edges, { kind: 'move', from: 2, to: 0 });
    expect(conditionsOf(r.data).map((c) => c.value)).toEqual(['c', 'a', 'b']);
    // x2's branch is still the "c" condition, now at index 0.
    expect(wiring(r.edges)).toMatchObject({ e2: 'condition-0', e0: 'condition-1', e1: 'condition-2', ef: 'false' });
  });

  it('adding appends an empty condition and leaves edges alone', () => {
    const r = applyConditionEdit('if', data, edges, { kind: 'add' });
    expect(conditionsOf(r.data)).toHaveLength(4);
    expect(conditionsOf(r.data)[3]).toEqual({ operator: 'equal', value: '' });
    expect(wiring(r.edges)).toEqual(wiring(edges));
  });

  it('updating changes one condition', () => {
    const r = applyConditionEdit('if', data, edges, { kind: 'update', index: 1, patch: { operator: 'equal' } });
    expect(conditionsOf(r.data)[1]).toEqual({ operator: 'equal', value: 'b' });
  });

  it('ignores out-of-range edits', () => {
    expect(conditionsOf(applyConditionEdit('if', data, edges, { kind: 'remove', index: 9 }).data)).toHaveLength(3);
    expect(wiring(applyConditionEdit('if', data, edges, { kind: 'move', from: 0, to: 5 }).edges)).toEqual(wiring(edges));
  });
});
