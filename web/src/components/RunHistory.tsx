import { useCallback, useEffect, useState } from 'react';
import { api, errorMessage } from '../api/client';
import type { Run } from '../api/types';
import { useApp } from '../store/app';
import { navigate, runPath } from '../store/router';
import { fmtTime, shortId } from './format';

const PAGE = 20;

export function RunHistory({ workflowId }: { workflowId: string | null }) {
  const [runs, setRuns] = useState<Run[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [more, setMore] = useState(false);
  const live = useApp((s) => s.runStatus);
  const load = useCallback(
    async (before?: string) => {
      if (!workflowId) return;
      try {
        const page = await api.listRuns({ workflowId, limit: PAGE, before });
        const list = Array.isArray(page) ? page : [];
        setRuns((prev) => (before && prev ? [...prev, ...list] : list));
        setMore(list.length === PAGE);
        setError(null);
      } catch (e) {
        setError(errorMessage(e));
      }
    },
    [workflowId],
  );
  useEffect(() => {
    setRuns(null);
    void load();
  }, [load]);
  // A run of this workflow we have not listed yet: reload the first page.
  const unseen = Object.values(live).some(
    (m) => m.workflowId === workflowId && runs !== null && !runs.some((r) => r.runId === m.runId),
  );
  useEffect(() => {
    if (unseen) void load();
  }, [unseen, load]);

  if (!workflowId) return <div className="panel-empty">Save the workflow to keep a run history.</div>;
  return (
    <div className="run-history" data-testid="run-history">
      <div className="side-head">
        <span className="sy-muted small">Newest first</span>
        <button className="btn btn--small" onClick={() => void load()} aria-label="Refresh run history">
          Refresh
        </button>
      </div>
      {error && <p className="sy-muted small">Could not load runs: {error}</p>}
      {runs && runs.length === 0 && <p className="sy-muted small">No runs yet.</p>}
      {runs && (
        <ul className="run-list">
          {runs.map((r) => {
            const status = live[r.runId]?.status ?? r.status;
            return (
              <li key={r.runId}>
                <a
                  href={runPath(r.runId)}
                  className="run-item"
                  onClick={(e) => {
                    e.preventDefault();
                    navigate(runPath(r.runId));
                  }}
                  data-testid={`run-item-${r.runId}`}
                >
                  <span className={`sy-status sy-status--${status}`}>{status}</span>
                  <span className="run-item__id">{shortId(r.runId)}</span>
                  {r.forkOf && (
                    <span className="sy-muted small" title={`Forked from run ${r.forkOf.runId} at ${r.forkOf.nodeId}`} data-testid={`run-item-fork-${r.runId}`}>
                      ↻ fork
                    </span>
                  )}
                  <span className="run-item__time">{fmtTime(r.createdAt)}</span>
                </a>
              </li>
            );
          })}
        </ul>
      )}
      {more && runs && runs.length > 0 && (
        <button className="btn btn--small" onClick={() => void load(runs[runs.length - 1]!.createdAt)}>
          Load older runs
        </button>
      )}
    </div>
  );
}
