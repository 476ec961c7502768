import { useEffect, useState } from 'react';
import { errorMessage } from '../api/client';
import type { Approval } from '../api/types';
import { useApp } from '../store/app';
import { approvalKey, useInbox } from '../store/inbox';
import { navigate, runPath, workflowPath } from '../store/router';
import { fmtTime, shortId } from './format';
import { ToolApprovalDetails } from './ToolViews';

/** "3 min", "2 h 5 min": how long a node has waited. */
export function waitedFor(since: string, now: number): string {
  const ms = now - new Date(since).getTime();
  if (!Number.isFinite(ms) || ms < 60_000) return 'less than a minute';
  const min = Math.floor(ms / 60_000);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ${min % 60} min`;
  return `${Math.floor(h / 24)} days`;
}

function InboxItem({ a, now }: { a: Approval; now: number }) {
  const key = approvalKey(a);
  const busy = useInbox((s) => !!s.busy[key]);
  const decide = useInbox((s) => s.decide);
  const toast = useApp((s) => s.toast);
  const [note, setNote] = useState('');
  const id = `${a.runId}-${a.nodeId}`;
  const detail = useInbox((s) => s.details[key]);
  useEffect(() => {
    void useInbox.getState().loadDetails(a);
  }, [a]);
  const go = (d: 'approve' | 'reject') =>
    decide(a, d, note).then(
      () => toast(`${d === 'approve' ? 'Approved' : 'Rejected'} ${detail?.name ?? a.nodeId} of ${a.workflowName}`, 'success'),
      (e: unknown) => toast(`Could not ${d}: ${errorMessage(e)}`, 'error'),
    );
  const open = (path: string) => (e: React.MouseEvent) => {
    e.preventDefault();
    navigate(path);
  };
  return (
    <li className="inbox-item approval-card" data-testid={`inbox-item-${id}`}>
      <div className="inbox-item__head">
        <div>
          {a.workflowId ? (
            <a href={workflowPath(a.workflowId)} onClick={open(workflowPath(a.workflowId))} className="inbox-item__wf">
              {a.workflowName}
            </a>
          ) : (
            <span className="inbox-item__wf">{a.workflowName}</span>
          )}
          <span className="sy-muted"> · </span>
          <b data-testid={`inbox-name-${id}`}>{detail?.name ?? a.nodeId}</b> <code className="sy-muted small">{a.nodeId}</code>
        </div>
        <span className="sy-muted small" title={new Date(a.since).toLocaleString()}>
          waiting {waitedFor(a.since, now)} (since {fmtTime(a.since)})
        </span>
      </div>
      {a.prompt && <p className="approval-card__prompt">{a.prompt}</p>}
      {detail?.previous && !a.tool && (
        <p className="inbox-item__previous" data-testid={`inbox-previous-${id}`}>
          Last round you rejected it: <q>{detail.previous}</q>
        </p>
      )}
      {a.tool ? (
        <>
          <ToolApprovalDetails tool={a.tool} testPrefix={`inbox-item-${id}`} />
          {a.input && (
            <details>
              <summary>The agent&apos;s input</summary>
              <pre className="code-block inbox-item__output">{a.input}</pre>
            </details>
          )}
        </>
      ) : (
        a.input && (
          <details open>
            <summary>Output to approve</summary>
            <pre className="code-block inbox-item__output">{a.input}</pre>
          </details>
        )
      )}
      {a.runInput && (
        <p className="sy-muted small inbox-item__runinput">
          Run input: <span>{a.runInput.length > 200 ? `${a.runInput.slice(0, 200)}…` : a.runInput}</span>
        </p>
      )}
      <label className="field">
        <span>{a.tool ? 'Note (a rejection’s note reaches the model as the reason)' : 'Note'}</span>
        <textarea
          rows={2}
          aria-label={`Note for ${a.nodeId} of ${a.workflowName}`}
          value={note}
          onChange={(e) => setNote(e.target.value)}
          data-testid={`inbox-note-${id}`}
        />
      </label>
      <div className="approval-card__buttons">
        <button className="btn btn--approve" disabled={busy} onClick={() => void go('approve')} data-testid={`inbox-approve-${id}`}>
          Approve
        </button>
        <button className="btn btn--reject" disabled={busy} onClick={() => void go('reject')} data-testid={`inbox-reject-${id}`}>
          Reject
        </button>
        <span className="header__spacer" />
        <a className="btn btn--small" href={runPath(a.runId)} onClick={open(runPath(a.runId))} data-testid={`inbox-open-${id}`}>
          Open run {shortId(a.runId)}
        </a>
      </div>
    </li>
  );
}

function NotifyToggle() {
  const notify = useInbox((s) => s.notify);
  const permission = useInbox((s) => s.permission);
  const setNotify = useInbox((s) => s.setNotify);
  if (permission === 'unsupported') return null;
  return (
    <label className="inbox__notify" title="Show a browser notification when a new approval arrives (while this tab is open)">
      <input
        type="checkbox"
        checked={notify}
        disabled={permission === 'denied'}
        onChange={(e) => void setNotify(e.target.checked)}
        data-testid="inbox-notify"
      />{' '}
      {permission === 'denied' ? 'Notifications are blocked for this site' : 'Notify me of new approvals'}
    </label>
  );
}

export function ApprovalsPage() {
  const items = useInbox((s) => s.items);
  const error = useInbox((s) => s.error);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    void useInbox.getState().refresh();
    const t = setInterval(() => setNow(Date.now()), 30_000);
    return () => clearInterval(t);
  }, []);
  return (
    <main className="inbox" data-testid="inbox">
      <div className="inbox__head">
        <h1>
          Approvals <span className="sy-muted">{items ? `(${items.length})` : ''}</span>
        </h1>
        <NotifyToggle />
      </div>
      {error && (
        <p className="problem problem--error" role="alert">
          Could not load approvals: {error}
        </p>
      )}
      {items === null && !error && <p className="sy-muted">Loading…</p>}
      {items?.length === 0 && (
        <p className="inbox__empty" data-testid="inbox-empty">
          Nothing is waiting for you. Runs that reach an approval node, and agents&apos; tool calls that need a
          reviewer, show up here, from every workflow.
        </p>
      )}
      {items && items.length > 0 && (
        <ul className="inbox__list" aria-label="Waiting approvals">
          {items.map((a) => (
            <InboxItem key={approvalKey(a)} a={a} now={now} />
          ))}
        </ul>
      )}
    </main>
  );
}
