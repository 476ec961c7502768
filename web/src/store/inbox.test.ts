import { describe, expect, it } from 'vitest';
import type { Approval } from '../api/types';
import { approvalKey, arrived } from './inbox';

const a = (runId: string, nodeId: string, since = '2026-11-26T10:00:00Z'): Approval => ({
  runId,
  nodeId,
  since,
  workflowName: 'W',
  kind: 'graph',
  prompt: 'ok?',
  input: 'x',
  runInput: '',
});

describe('arrived', () => {
  it('announces nothing on the first load', () => {
    expect(arrived(null, [a('r1', 'n')])).toEqual([]);
  });
  it('finds the approvals that are new', () => {
    const prev = [a('r1', 'n'), a('r2', 'n')];
    const next = [a('r2', 'n'), a('r3', 'n'), a('r1', 'm')];
    expect(arrived(prev, next).map(approvalKey)).toEqual([approvalKey(a('r3', 'n')), approvalKey(a('r1', 'm'))]);
  });
  it('counts a node asked again after a reject as new', () => {
    const prev = [a('r1', 'n', '2026-11-26T10:00:00Z')];
    expect(arrived(prev, [a('r1', 'n', '2026-11-26T10:05:00Z')])).toHaveLength(1);
  });
  it('announces nothing when approvals only go away', () => {
    expect(arrived([a('r1', 'n'), a('r2', 'n')], [a('r2', 'n')])).toEqual([]);
  });
});
