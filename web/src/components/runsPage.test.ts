import { describe, expect, it } from 'vitest';
import type { Run } from '../api/types';
import { runDuration, runTokens } from './RunsPage';

describe('runDuration', () => {
  it('measures a finished run from start to end', () => {
    expect(runDuration({ createdAt: '2026-11-26T10:00:00Z', finishedAt: '2026-11-26T10:00:02.5Z' }, 0)).toBe('2.5 s');
  });
  it('measures a running run up to now', () => {
    expect(runDuration({ createdAt: '2026-11-26T10:00:00Z' }, Date.parse('2026-11-26T10:03:05Z'))).toBe('3 min 5 s');
  });
  it('says nothing for a bad time', () => {
    expect(runDuration({ createdAt: 'nope' }, 0)).toBe('');
  });
});

describe('runTokens', () => {
  const base = { runId: 'r', status: 'completed', createdAt: '' } as Run;
  it('reads the usage total when reported', () => {
    expect(runTokens({ ...base, usage: { totalTokens: 1234 } } as Run)).toBe(1234);
  });
  it('is null without usage', () => {
    expect(runTokens(base)).toBeNull();
  });
});
