import { ReactFlowProvider } from '@xyflow/react';
import { useEffect, useState } from 'react';
import { api, errorMessage } from '../api/client';
import type { Graph } from '../graph/types';
import { isTerminal, type PendingApproval } from '../api/types';
import { childCalls, fmtDuration, idleState, topLevelCalls, type RunLog, type SubagentCall } from '../run/reducer';
import { useApp } from '../store/app';
import { navigate, runPath, workflowPath } from '../store/router';
import { effectiveStatus, useRun, viewLog } from '../store/run';
import { RunCanvas } from './Canvas';
import { fmtTime, shortId } from './format';
import { PanelToggle } from './PanelToggle';
import { fmtCost } from './RunsPage';
import { usePanels } from '../store/panels';
import { LogPanel } from './LogPanel';
import { ToolApprovalDetails, TranscriptView } from './ToolViews';
import { approvalName } from '../graph/checks';
import { ForkDialog, ForkOfNote, RunFromHereButton } from './ForkDialog';

const STREAM_TEXT: Record<string, string> = {
  idle: '',
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting…',
  closed: 'complete',
};

/** A waiting node's name as the canvas shows it ("approval of “Writer”"), and the note of its last rejection. */
export function useWaitingNode(nodeId: string): { name: string; previous: string | null } {
  const nodes = useRun((s) => s.nodes);
  const edges = useRun((s) => s.edges);
  const previous = useRun((s) => s.log.nodes[nodeId]?.lastRejection ?? null);
  return { name: approvalName(nodes, edges, nodeId), previous };
}

function ApprovalCard({ p }: { p: PendingApproval }) {
  const { name, previous } = useWaitingNode(p.nodeId);
  const busy = useRun((s) => !!s.busy[p.nodeId]);
  const decide = useRun((s) => s.decide);
  const select = useRun((s) => s.select);
  const toast = useApp((s) => s.toast);
  const [note, setNote] = useState('');
  const go = (d: 'approve' | 'reject') =>
    decide(p.nodeId, d, note).then(
      () => {
        setNote('');
        toast(d === 'approve' ? 'Approved' : 'Rejected', 'success');
      },
      (e: unknown) => toast(`Could not ${d}: ${errorMessage(e)}`, 'error'),
    );
  return (
    <li className="approval-card" data-testid={`approval-card-${p.nodeId}`}>
      <div className="approval-card__head">
        <button className="link" onClick={() => select(p.nodeId)} data-testid={`approval-name-${p.nodeId}`}>
          {name}
        </button>{' '}
        <code className="sy-muted small">{p.nodeId}</code>
        <span className="sy-muted small">waiting since {fmtTime(p.since)}</span>
      </div>
      {p.prompt && <p className="approval-card__prompt">{p.prompt}</p>}
      {previous && !p.tool && (
        <p className="approval-card__previous" data-testid={`approval-previous-${p.nodeId}`}>
          Last round you rejected it: <q>{previous}</q>
        </p>
      )}
      {p.tool ? (
        <ToolApprovalDetails tool={p.tool} testPrefix={`approval-card-${p.nodeId}`} />
      ) : (
        p.input && (
          <details open>
            <summary>Output to approve</summary>
            <pre className="code-block">{p.input}</pre>
          </details>
        )
      )}
      <label className="field">
        <span>{p.tool ? 'Note (a rejection’s note reaches the model)' : 'Note'}</span>
        <textarea rows={2} aria-label={`Approval note for ${p.nodeId}`} value={note} onChange={(e) => setNote(e.target.value)} data-testid={`approval-note-${p.nodeId}`} />
      </label>
      <div className="approval-card__buttons">
        <button className="btn btn--approve" disabled={busy} onClick={() => void go('approve')} data-testid={`approve-${p.nodeId}`} aria-label={`Approve ${p.nodeId}`}>
          Approve
        </button>
        <button className="btn btn--reject" disabled={busy} onClick={() => void go('reject')} data-testid={`reject-${p.nodeId}`} aria-label={`Reject ${p.nodeId}`}>
          Reject
        </button>
      </div>
    </li>
  );
}

function Approvals() {
  const pending = useRun((s) => (s.replay ? undefined : s.run?.pendingApprovals));
  const nodes = useRun((s) => s.log.nodes);
  const list = (pending ?? []).filter((p) => {
    const st = nodes[p.nodeId]?.status;
    return st !== 'completed' && st !== 'failed' && st !== 'skipped' && st !== 'stopped';
  });
  if (list.length === 0) return null;
  return (
    <section className="approvals" aria-label="Pending approvals" data-testid="approvals">
      <h2 className="side-title">Waiting for approval ({list.length})</h2>
      <ul>
        {list.map((p) => (
          <ApprovalCard key={`${p.nodeId}/${p.tool?.callId ?? ''}`} p={p} />
        ))}
      </ul>
    </section>
  );
}

/** With the details panel hidden, waiting approvals are still announced. */
function PendingBadge() {
  const n = useRun((s) => (s.replay ? 0 : (s.run?.pendingApprovals?.length ?? 0)));
  const show = usePanels((s) => s.set);
  if (n === 0) return null;
  return (
    <button className="btn btn--small pending-badge" onClick={() => show('right', true)} data-testid="pending-badge">
      {n} waiting for approval
    </button>
  );
}

function CallTree({ log, calls }: { log: RunLog; calls: SubagentCall[] }) {
  if (calls.length === 0) return null;
  return (
    <ul className="calls">
      {calls.map((c) => (
        <li key={c.callId} data-testid={`subagent-call-${c.callId}`}>
          <span className={`sy-status sy-status--${c.status}`}>{c.status}</span> <b>{c.name}</b>
          {c.message && <div className="calls__msg">→ {c.message}</div>}
          {c.result && <div className="calls__msg">← {c.result}</div>}
          <CallTree log={log} calls={childCalls(log, c.callId)} />
        </li>
      ))}
    </ul>
  );
}

function NodeDetails() {
  const id = useRun((s) => s.selectedNodeId);
  const node = useRun((s) => (id ? s.nodes.find((n) => n.id === id) : undefined));
  const st = useRun((s) => (id ? (viewLog(s).nodes[id] ?? idleState()) : null));
  const output = useRun((s) => (id && !s.replay ? s.run?.outputs?.[id] : undefined));
  const log = useRun(viewLog);
  const transcript = id ? log.transcripts[id] : undefined;
  const setFilter = useRun((s) => s.setFilter);
  const parent = useRun((s) => s.log.fork?.parentRunId ?? s.run?.forkOf?.runId ?? '');
  const edited = useRun((s) => (id ? !!s.log.fork?.reused[id]?.edited : false));
  if (!id || !st) return <div className="panel-empty">Click a node to see its prompt, output and errors.</div>;
  const d = (node?.data ?? {}) as { agentName?: string; label?: string };
  const calls = topLevelCalls(log, id);
  const text = st.text || st.output || output || '';
  return (
    <section className="node-details" aria-label={`Details of ${id}`} data-testid="node-details">
      <div className="inspector__head">
        <b>{d.agentName || d.label || id}</b>
        <code className="sy-muted">{id}</code>
        <span className={`sy-status sy-status--${st.status}`} data-testid="node-details-status">
          {st.status}
        </span>
        <button className="btn btn--small" onClick={() => setFilter(id)}>
          Filter log
        </button>
      </div>
      {node && <RunFromHereButton nodeId={id} />}
      {st.reused && parent && (
        <p className="detail-block node-details__reused" data-testid="node-details-reused">
          <b>{edited ? 'Edited output:' : 'Reused:'}</b> this node did not run; {edited ? 'it took the output edited when the run was forked from' : 'it took its output from'}{' '}
          <a
            href={runPath(parent)}
            onClick={(e) => {
              e.preventDefault();
              navigate(runPath(parent));
            }}
          >
            run {shortId(parent)}
          </a>
          .
        </p>
      )}
      {(st.visits > 0 || st.tokens > 0) && (
        <dl className="facts" data-testid="node-details-facts">
          {st.visits > 0 && (
            <>
              <dt>Visits</dt>
              <dd>{st.visits}</dd>
            </>
          )}
          {st.durationMs !== null && (
            <>
              <dt>{st.visits > 1 ? 'Last visit' : 'Duration'}</dt>
              <dd>{fmtDuration(st.durationMs)}</dd>
            </>
          )}
          {st.visits > 1 && st.totalMs > 0 && (
            <>
              <dt>All visits</dt>
              <dd>{fmtDuration(st.totalMs)}</dd>
            </>
          )}
          {st.tokens > 0 && (
            <>
              <dt>Tokens</dt>
              <dd>{st.tokens.toLocaleString('en-US')}</dd>
            </>
          )}
        </dl>
      )}
      {st.status === 'skipped' && (
        <p className="detail-block node-details__skip" data-testid="node-details-skip">
          <b>Skipped:</b> {st.skipReason || 'the run never reached it.'}
        </p>
      )}
      {st.errors.length > 0 && (
        <div className="detail-block">
          <h3>Errors</h3>
          <ul className="node-problems">
            {st.errors.map((e, i) => (
              <li key={i} className="problem problem--error">
                {e}
              </li>
            ))}
          </ul>
        </div>
      )}
      {st.prompt && (
        <details className="detail-block">
          <summary>Prompt</summary>
          <pre className="code-block" data-testid="node-details-prompt">
            {st.prompt}
          </pre>
        </details>
      )}
      {transcript && transcript.items.length > 0 && (
        <div className="detail-block">
          <h3>
            Tool calls <span className="sy-muted">({st.toolCalls})</span>
          </h3>
          <TranscriptView transcript={transcript} />
        </div>
      )}
      <div className="detail-block">
        <h3>Output{st.status === 'running' ? ' (streaming)' : ''}</h3>
        {text ? (
          <pre className="code-block" data-testid="node-details-output">
            {text}
          </pre>
        ) : (
          <p className="sy-muted small">No output yet.</p>
        )}
      </div>
      {st.checks.length > 0 && (
        <div className="detail-block">
          <h3>Checks</h3>
          <ul>
            {st.checks.map((c, i) => (
              <li key={i}>{c}</li>
            ))}
          </ul>
        </div>
      )}
      {st.warnings.length > 0 && (
        <div className="detail-block">
          <h3>Warnings</h3>
          <ul>
            {st.warnings.map((c, i) => (
              <li key={i}>{c}</li>
            ))}
          </ul>
        </div>
      )}
      {calls.length > 0 && (
        <div className="detail-block">
          <h3>Subagent calls</h3>
          <CallTree log={log} calls={calls} />
        </div>
      )}
    </section>
  );
}

function RunHeader() {
  const runId = useRun((s) => s.runId);
  const run = useRun((s) => s.run);
  const status = useRun(effectiveStatus);
  const stream = useRun((s) => s.stream);
  const cancel = useRun((s) => s.cancel);
  const toast = useApp((s) => s.toast);
  const [cancelling, setCancelling] = useState(false);
  const known = useRun((s) => s.run !== null || s.log.lastSeq > 0);
  const active = known && !isTerminal(status);
  const wfName = useApp((s) => (run?.workflowId ? s.workflows?.find((w) => w.id === run.workflowId)?.name : undefined));
  const title = run ? (wfName ?? (run.workflowId ? 'Workflow run' : 'Unsaved workflow')) : 'Run';
  const replaying = useRun((s) => s.replay !== null);
  const startReplay = useRun((s) => s.startReplay);
  const stopReplay = useRun((s) => s.stopReplay);
  const [rerunning, setRerunning] = useState(false);
  const rerun = async () => {
    if (!run) return;
    setRerunning(true);
    try {
      const next = run.workflowId
        ? await api.createRun({ workflowId: run.workflowId, input: run.input ?? '' })
        : await api.createRun({ graph: run.graph as Graph, input: run.input ?? '' });
      navigate(runPath(next.runId));
    } catch (e) {
      toast(`Re-run failed: ${errorMessage(e)}`, 'error');
    } finally {
      setRerunning(false);
    }
  };
  const doCancel = async () => {
    if (!confirm('Cancel this run?')) return;
    setCancelling(true);
    try {
      await cancel();
    } catch (e) {
      toast(`Cancel failed: ${errorMessage(e)}`, 'error');
    } finally {
      setCancelling(false);
    }
  };
  return (
    <div className="toolbar toolbar--run" data-testid="run-header">
      {run?.workflowId && (
        <a
          className="btn"
          href={workflowPath(run.workflowId)}
          onClick={(e) => {
            e.preventDefault();
            navigate(workflowPath(run.workflowId!));
          }}
          data-testid="back-to-workflow"
        >
          ← Workflow
        </a>
      )}
      <h1 className="toolbar__title" data-testid="run-title">
        {title} <code className="sy-muted small" title={runId ?? ''}>{runId ? shortId(runId) : ''}</code>
      </h1>
      <ForkOfNote />
      {known && (
        <span className={`sy-status sy-status--${status}`} data-testid="run-status" aria-label={`Run status ${status}`}>
          {status}
        </span>
      )}
      {run?.waitingForInput && <span className="sy-status sy-status--waiting">needs approval</span>}
      <span className={`stream stream--${stream}`} data-testid="stream-state" role="status">
        {STREAM_TEXT[stream] ?? stream}
      </span>
      {run?.usage && run.usage.totalTokens > 0 && (
        <span className="sy-muted small" data-testid="run-tokens" title={`${run.usage.promptTokens.toLocaleString('en-US')} prompt + ${run.usage.completionTokens.toLocaleString('en-US')} completion tokens`}>
          {run.usage.totalTokens.toLocaleString('en-US')} tokens
          {run.usage.costUsd != null && ` · ${fmtCost(run.usage.costUsd)}`}
        </span>
      )}
      <span className="sy-muted small run-header__times" title={run ? `started ${fmtTime(run.createdAt)}${run.finishedAt ? ` · finished ${fmtTime(run.finishedAt)}` : ''}` : undefined}>
        {run && `started ${fmtTime(run.createdAt)}`}
        {run?.finishedAt && ` · finished ${fmtTime(run.finishedAt)}`}
      </span>
      {run?.workDir && (
        <span className="sy-muted small" data-testid="run-workdir" title={run.workDir}>
          {run.branch ? (
            <>
              worktree <code>{run.branch}</code>
            </>
          ) : (
            <>
              in <code>{shortPath(run.workDir)}</code>
            </>
          )}
        </span>
      )}
      <div className="toolbar__group toolbar__run">
        {known && (
          <button
            className={`btn${replaying ? ' is-active' : ''}`}
            onClick={() => (replaying ? stopReplay() : void startReplay().catch((e: unknown) => toast(`Replay failed: ${errorMessage(e)}`, 'error')))}
            aria-pressed={replaying}
            data-testid="replay-toggle"
            title="Step through the run's event log; the canvas shows the run as of each event"
          >
            {replaying ? 'Exit replay' : 'Replay'}
          </button>
        )}
        {run && (!!run.workflowId || (!!run.graph && run.kind !== 'yaml')) && (
          <button className="btn" onClick={() => void rerun()} disabled={rerunning} data-testid="rerun" title="Start a new run with the same input">
            {rerunning ? 'Starting…' : 'Re-run'}
          </button>
        )}
        <PanelToggle side="right" label="run details" />
        {active && (
          <button className="btn btn--danger" onClick={() => void doCancel()} disabled={cancelling} data-testid="cancel-run">
            {cancelling ? 'Cancelling…' : 'Cancel run'}
          </button>
        )}
      </div>
    </div>
  );
}

/** The replay scrubber: one step per stored event. */
function ReplayBar() {
  const replay = useRun((s) => s.replay);
  const seek = useRun((s) => s.seekReplay);
  const [playing, setPlaying] = useState(false);
  const at = replay?.at ?? 0;
  const total = replay?.events.length ?? 0;
  useEffect(() => {
    if (!playing) return;
    if (at >= total) {
      setPlaying(false);
      return;
    }
    const t = setTimeout(() => seek(at + 1), 120);
    return () => clearTimeout(t);
  }, [playing, at, total, seek]);
  if (!replay) return null;
  const ev = at > 0 ? replay.events[at - 1] : undefined;
  return (
    <div className="replay" role="group" aria-label="Replay" data-testid="replay">
      <button className="btn btn--small" onClick={() => seek(at - 1)} disabled={at === 0} aria-label="Previous event" data-testid="replay-prev">
        ◀
      </button>
      <button className="btn btn--small" onClick={() => setPlaying(!playing)} disabled={replay.loading} data-testid="replay-play">
        {playing ? 'Pause' : 'Play'}
      </button>
      <button className="btn btn--small" onClick={() => seek(at + 1)} disabled={at >= total} aria-label="Next event" data-testid="replay-next">
        ▶
      </button>
      <input
        type="range"
        className="replay__range"
        min={0}
        max={total}
        value={at}
        onChange={(e) => seek(Number(e.target.value))}
        aria-label="Replay position"
        aria-valuetext={`event ${at} of ${total}`}
        data-testid="replay-range"
      />
      <span className="replay__pos" data-testid="replay-pos">
        {replay.loading ? 'loading events…' : `${at} / ${total}`}
      </span>
      <span className="replay__ev sy-muted small" data-testid="replay-event">
        {ev ? `${fmtTime(ev.timestamp)} · ${ev.nodeId} · ${ev.type}${ev.content && ev.type !== 'llm_delta' ? `: ${ev.content.slice(0, 60)}` : ''}` : 'before the first event'}
      </span>
    </div>
  );
}

export function RunPage({ id }: { id: string }) {
  const open = useRun((s) => s.open);
  const close = useRun((s) => s.close);
  const loadError = useRun((s) => s.loadError);
  const runError = useRun((s) => s.run?.error);
  // A cancelled run's "error" is the reason it was stopped, not a failure.
  const cancelled = useRun((s) => effectiveStatus(s) === 'cancelled');
  const hasGraph = useRun((s) => s.nodes.length > 0);
  const hasRun = useRun((s) => s.run !== null);
  const details = usePanels((s) => s.open.right);
  useEffect(() => {
    open(id);
    return () => close();
  }, [id, open, close]);
  return (
    <ReactFlowProvider>
      <div className="runpage">
        <RunHeader />
        <ReplayBar />
        {runError && (
          <div className={`banner ${cancelled ? 'banner--warning' : 'banner--error'}`} role="alert" data-testid="run-error">
            {runError}
          </div>
        )}
        <div className="runpage__main">
          <main className="editor__canvas">
            {loadError && !hasRun ? (
              <div className="center-msg" role="alert">
                <h2>Could not load this run</h2>
                <p>{loadError}</p>
                <button className="btn" onClick={() => void useRun.getState().refresh()}>
                  Try again
                </button>
              </div>
            ) : hasGraph || !hasRun ? (
              <RunCanvas />
            ) : (
              <div className="center-msg">This run has no graph to show; its log is below.</div>
            )}
          </main>
          {details ? (
            <aside className="side side--right" aria-label="Run details" data-testid="run-details-panel">
              <Approvals />
              <NodeDetails />
            </aside>
          ) : (
            <PendingBadge />
          )}
        </div>
        <LogPanel />
        <ForkDialog />
      </div>
    </ReactFlowProvider>
  );
}

/** shortPath keeps the last two parts of a long folder path. */
function shortPath(p: string): string {
  const parts = p.split('/').filter(Boolean);
  return parts.length > 2 ? `…/${parts.slice(-2).join('/')}` : p;
}
