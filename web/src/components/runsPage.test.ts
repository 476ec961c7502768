import { describe, expect, it } from 'vitest';
import type { Run } from '../api/types';
import { runDuration, runFailure, runTokens } from './RunsPage';
import { parseRoute, queryParam } from '../store/router';

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

describe('runFailure', () => {
  const run = (status: string, error?: string) => ({ status, error }) as Run;
  it('is the first line of the error of a run that did not complete', () => {
    expect(runFailure(run('failed', '\nnode "fetch" failed: exit status 1\nstderr: x'))).toBe('node "fetch" failed: exit status 1');
    expect(runFailure(run('cancelled'))).toBe('cancelled');
    expect(runFailure(run('interrupted'))).toBe('interrupted (the server stopped)');
  });
  it('is empty for runs that completed or are still going', () => {
    expect(runFailure(run('completed', 'old'))).toBe('');
    expect(runFailure(run('running'))).toBe('');
  });
});

describe('the runs page address', () => {
  it('is the runs route with its filters in the query', () => {
    expect(parseRoute('/runs?status=failed&workflow=w1')).toEqual({ name: 'runs' });
    expect(queryParam('?status=failed&workflow=w1', 'workflow')).toBe('w1');
    expect(queryParam('', 'status')).toBe('');
  });
});
