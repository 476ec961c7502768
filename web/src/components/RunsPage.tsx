import { useCallback, useEffect, useMemo, useState } from 'react';
import { api, errorMessage } from '../api/client';
import { isTerminal, type Run, type RunStatus } from '../api/types';
import { fmtDuration } from '../run/reducer';
import { useApp } from '../store/app';
import { navigate, queryParam, runPath, setQuery, useRouter, workflowPath } from '../store/router';
import { shortId } from './format';

const PAGE = 50;
const STATUSES: RunStatus[] = ['running', 'paused', 'completed', 'failed', 'cancelled', 'interrupted', 'pending'];

/** Date and time, always both: a history spans days. */
function fmtStarted(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** US dollars, with enough digits for small amounts: "$0.0042", "$1.27". */
export function fmtCost(usd: number): string {
  return usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toPrecision(2)}`;
}

/** A run's token total when the server reports usage. */
export function runTokens(r: Run): number | null {
  return typeof r.usage?.totalTokens === 'number' ? r.usage.totalTokens : null;
}

export function runDuration(r: Pick<Run, 'createdAt' | 'finishedAt'>, now: number): string {
  const start = new Date(r.createdAt).getTime();
  const end = r.finishedAt ? new Date(r.finishedAt).getTime() : now;
  if (!Number.isFinite(start) || !Number.isFinite(end)) return '';
  return fmtDuration(Math.max(0, end - start));
}

/** Why a run did not complete, in one line (failed, interrupted, cancelled), or "". */
export function runFailure(r: Pick<Run, 'status' | 'error'>, status: string = r.status): string {
  if (status === 'completed' || status === 'running' || status === 'paused' || status === 'pending') return '';
  const first = (r.error ?? '').split('\n').find((l) => l.trim()) ?? '';
  if (first) return first.trim();
  return status === 'cancelled' ? 'cancelled' : status === 'interrupted' ? 'interrupted (the server stopped)' : '';
}

/** Every run across workflows, newest first, filterable (the filters are in the address), with re-run. */
export function RunsPage() {
  // The filters live in the address: a reload, a shared link and Back keep them.
  const search = useRouter((s) => s.search);
  const status = queryParam(search, 'status');
  const workflowId = queryParam(search, 'workflow');
  const setStatus = (v: string) => setQuery({ status: v, workflow: workflowId });
  const setWorkflowId = (v: string) => setQuery({ status, workflow: v });
  const [runs, setRuns] = useState<Run[] | null>(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [now, setNow] = useState(() => Date.now());
  const [busy, setBusy] = useState<string | null>(null);
  const workflows = useApp((s) => s.workflows);
  const live = useApp((s) => s.runStatus);
  const toast = useApp((s) => s.toast);
  const names = useMemo(() => new Map((workflows ?? []).map((w) => [w.id, w.name])), [workflows]);

  const load = useCallback(
    async (before?: string) => {
      try {
        const page = await api.listRuns({ status, workflowId, limit: PAGE, before });
        const list = Array.isArray(page) ? page : [];
        setRuns((prev) => (before && prev ? [...prev, ...list] : list));
        setMore(list.length === PAGE);
        setError(null);
      } catch (e) {
        setError(errorMessage(e));
      }
    },
    [status, workflowId],
  );
  useEffect(() => {
    setRuns(null);
    void load();
  }, [load]);
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 5_000);
    return () => clearInterval(t);
  }, []);
  // A run we have not listed (just started anywhere), or one whose status
  // moved: reload the first page so filters and durations stay right.
  const stale = useMemo(
    () =>
      runs !== null &&
      Object.values(live).some((m) => {
        const r = runs.find((x) => x.runId === m.runId);
        return r ? r.status !== m.status && isTerminal(m.status) : !workflowId || m.workflowId === workflowId;
      }),
    [live, runs, workflowId],
  );
  useEffect(() => {
    if (!stale) return;
    const t = setTimeout(() => void load(), 300);
    return () => clearTimeout(t);
  }, [stale, load]);

  const rerun = async (r: Run) => {
    if (!r.workflowId) return;
    setBusy(r.runId);
    try {
      const next = await api.createRun({ workflowId: r.workflowId, input: r.input ?? '' });
      navigate(runPath(next.runId));
    } catch (e) {
      toast(`Re-run failed: ${errorMessage(e)}`, 'error');
    } finally {
      setBusy(null);
    }
  };
  const open = (path: string) => (e: React.MouseEvent) => {
    e.preventDefault();
    navigate(path);
  };

  return (
    <main className="runs" data-testid="runs-page">
      <div className="runs__head">
        <h1>Runs</h1>
        <label className="field field--inline">
          <span>Status</span>
          <select value={status} onChange={(e) => setStatus(e.target.value)} data-testid="runs-status">
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label className="field field--inline">
          <span>Workflow</span>
          <select value={workflowId} onChange={(e) => setWorkflowId(e.target.value)} data-testid="runs-workflow">
            <option value="">All workflows</option>
            {(workflows ?? []).map((w) => (
              <option key={w.id} value={w.id}>
                {w.name}
              </option>
            ))}
          </select>
        </label>
        <button className="btn btn--small" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      {error && (
        <p className="problem problem--error" role="alert">
          Could not load runs: {error}
        </p>
      )}
      {runs === null && !error && <p className="sy-muted">Loading…</p>}
      {runs?.length === 0 && <p className="sy-muted" data-testid="runs-empty">No runs match.</p>}
      {runs && runs.length > 0 && (
        <table className="runs__table" aria-label="Runs">
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Workflow</th>
              <th scope="col">Input</th>
              <th scope="col">Failure</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
              <th scope="col">Tokens</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => {
              const st = live[r.runId]?.status ?? r.status;
              const tokens = runTokens(r);
              const name = r.workflowId ? (names.get(r.workflowId) ?? shortId(r.workflowId)) : 'Unsaved workflow';
              return (
                <tr key={r.runId} data-testid={`runs-row-${r.runId}`}>
                  <td>
                    <span className={`sy-status sy-status--${st}`}>{st}</span>
                    {r.forkOf && (
                      <a
                        className="runs__fork"
                        href={runPath(r.forkOf.runId)}
                        onClick={open(runPath(r.forkOf.runId))}
                        title={`Forked from run ${r.forkOf.runId} at node ${r.forkOf.nodeId}`}
                        data-testid={`runs-fork-${r.runId}`}
                      >
                        ↻ fork of {shortId(r.forkOf.runId)}
                      </a>
                    )}
                  </td>
                  <td>
                    {r.workflowId ? (
                      <a href={workflowPath(r.workflowId)} onClick={open(workflowPath(r.workflowId))}>
                        {name}
                      </a>
                    ) : (
                      <span className="sy-muted">{name}</span>
                    )}
                  </td>
                  <td className="runs__input" title={r.input ?? ''}>
                    {r.input ? (r.input.length > 80 ? `${r.input.slice(0, 80)}…` : r.input) : <span className="sy-muted">—</span>}
                  </td>
                  <td className="runs__failure" title={r.error ?? ''} data-testid={`runs-failure-${r.runId}`}>
                    {runFailure(r, st) || <span className="sy-muted">—</span>}
                  </td>
                  <td className="runs__num">{fmtStarted(r.createdAt)}</td>
                  <td className="runs__num" data-testid={`runs-duration-${r.runId}`}>
                    {runDuration(r, now)}
                    {!r.finishedAt && !isTerminal(st) ? ' so far' : ''}
                  </td>
                  <td className="runs__num" data-testid={`runs-tokens-${r.runId}`}>
                    {tokens === null ? <span className="sy-muted">—</span> : tokens.toLocaleString('en-US')}
                    {r.usage?.costUsd != null && <span className="sy-muted"> · {fmtCost(r.usage.costUsd)}</span>}
                  </td>
                  <td>
                    {/* Flex inside the cell: a flex td loses the row's height and its rule. */}
                    <div className="runs__actions">
                      <a className="btn btn--small" href={runPath(r.runId)} onClick={open(runPath(r.runId))} data-testid={`runs-open-${r.runId}`}>
                        Open
                      </a>
                      {r.workflowId && (
                        <button className="btn btn--small" disabled={busy === r.runId} onClick={() => void rerun(r)} data-testid={`runs-rerun-${r.runId}`}>
                          Re-run
                        </button>
                      )}
                    </div>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {more && runs && runs.length > 0 && (
        <button className="btn btn--small" onClick={() => void load(runs[runs.length - 1]!.createdAt)} data-testid="runs-more">
          Load older runs
        </button>
      )}
    </main>
  );
}
