// "Run from here": the button (node details, the node's context menu), the
// dialog that says which stored outputs the new run reuses and lets one be
// edited, and the "forked from" link in a forked run's header.
import { useEffect, useRef } from 'react';
import { forkBlocker } from '../run/fork';
import { useApp } from '../store/app';
import { useFork } from '../store/fork';
import { navigate, runPath } from '../store/router';
import { effectiveStatus, useRun } from '../store/run';
import { nodeName } from '../graph/checks';
import { shortId } from './format';

/** Why the open run cannot be run from a node ('' when it can; the run not loaded yet counts as cannot). */
export function useForkBlocker(): string {
  const known = useRun((s) => s.run !== null);
  const status = useRun(effectiveStatus);
  if (!known) return 'Loading the run…';
  return forkBlocker(status);
}

/** Opens the dialog for a node of the open run. */
export function openFork(nodeId: string): void {
  const { run, nodes, edges } = useRun.getState();
  if (!run) return;
  const status = effectiveStatus(useRun.getState());
  // The stream may know the run ended before the fetched run does.
  useFork.getState().open({ ...run, status: status as typeof run.status }, nodes, edges, nodeId);
}

/** The node details' "Run from here" button, disabled with the reason on a run that has not ended. */
export function RunFromHereButton({ nodeId }: { nodeId: string }) {
  const blocker = useForkBlocker();
  return (
    <div className="run-from-here">
      <button
        className="btn btn--small btn--primary"
        disabled={!!blocker}
        title={blocker || 'Start a new run from this node, reusing the outputs of the nodes before it'}
        onClick={() => openFork(nodeId)}
        data-testid="run-from-here"
      >
        ↻ Run from here
      </button>
      {blocker && (
        <span className="sy-muted small" data-testid="run-from-here-reason">
          {blocker}
        </span>
      )}
    </div>
  );
}

/** A right-click menu on a run canvas node: Run from here. */
export function NodeMenu({ nodeId, x, y, onClose }: { nodeId: string; x: number; y: number; onClose: () => void }) {
  const blocker = useForkBlocker();
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    ref.current?.querySelector<HTMLButtonElement>('button:not(:disabled)')?.focus();
    const away = (e: Event) => {
      if (!ref.current?.contains(e.target as Node)) onClose();
    };
    const key = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onClose();
    };
    window.addEventListener('pointerdown', away, true);
    window.addEventListener('keydown', key);
    window.addEventListener('blur', onClose);
    return () => {
      window.removeEventListener('pointerdown', away, true);
      window.removeEventListener('keydown', key);
      window.removeEventListener('blur', onClose);
    };
  }, [onClose]);
  return (
    <div ref={ref} className="node-menu" role="menu" aria-label={`Node ${nodeId}`} style={{ left: x, top: y }} data-testid="node-menu">
      <button
        role="menuitem"
        className="node-menu__item"
        disabled={!!blocker}
        title={blocker || undefined}
        onClick={() => {
          onClose();
          openFork(nodeId);
        }}
        data-testid="node-menu-run-from-here"
      >
        ↻ Run from here
      </button>
      {blocker && <div className="node-menu__note sy-muted small">{blocker}</div>}
    </div>
  );
}

export function ForkDialog() {
  const s = useFork();
  const toast = useApp((a) => a.toast);
  useEffect(() => {
    if (!s.from) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') useFork.getState().close();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [s.from]);
  if (!s.from || !s.runId) return null;
  const editing = s.reused.find((r) => r.id === s.editId);
  const changed = !!editing && editing.output !== s.text;
  const submit = async () => {
    const id = await useFork.getState().submit();
    if (!id) return;
    toast(`Started a run from ${s.fromName}`, 'success');
    navigate(runPath(id));
  };
  return (
    <div className="modal-backdrop" role="presentation">
      <div className="modal fork-dialog" role="dialog" aria-modal="true" aria-labelledby="fork-title" data-testid="fork-dialog">
        <h2 id="fork-title">Run from {s.fromName}</h2>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <p className="fork-dialog__lead">
            A new run of this workflow starts at {s.fromName}: it and every node after it run again, with this run’s input.
          </p>
          {s.reused.length === 0 ? (
            <p className="sy-muted" data-testid="fork-reused-none">
              No node before {s.fromName} finished in this run: the new run starts from scratch.
            </p>
          ) : (
            <>
              <h3 className="fork-dialog__sub">
                Reused from run <code>{shortId(s.runId)}</code> ({s.reused.length} node{s.reused.length === 1 ? '' : 's'}, not run again)
              </h3>
              <ul className="fork-reused" data-testid="fork-reused-list">
                {s.reused.map((r) => (
                  <li key={r.id} className={`fork-reused__item${r.id === s.editId ? ' is-editing' : ''}`} data-testid={`fork-reused-${r.id}`}>
                    <div className="fork-reused__head">
                      <b>{r.name}</b> <code className="sy-muted small">{r.id}</code>
                      {r.id === s.editId ? (
                        <button type="button" className="btn btn--small" onClick={() => s.edit(null)} data-testid={`fork-unedit-${r.id}`}>
                          Use the stored output
                        </button>
                      ) : (
                        <button type="button" className="btn btn--small" onClick={() => s.edit(r.id)} data-testid={`fork-edit-${r.id}`}>
                          Edit output
                        </button>
                      )}
                    </div>
                    {r.id !== s.editId && (
                      <pre className="fork-reused__out" title={r.output}>
                        {r.output === '' ? <span className="sy-muted">(empty output)</span> : r.output}
                      </pre>
                    )}
                  </li>
                ))}
              </ul>
            </>
          )}
          {editing && (
            <div className="field">
              <label htmlFor="fork-text">
                Output of {editing.name} for the new run {changed ? <span className="fork-dialog__changed">(edited: pinned)</span> : <span className="sy-muted">(as stored)</span>}
              </label>
              <textarea id="fork-text" rows={8} value={s.text} autoFocus onChange={(e) => s.setText(e.target.value)} data-testid="fork-text" />
            </div>
          )}
          {s.error && (
            <p className="problem problem--error" role="alert" data-testid="fork-error">
              {s.error}
            </p>
          )}
          <div className="modal__actions">
            <button type="button" className="btn" onClick={() => s.close()} disabled={s.busy} data-testid="fork-cancel">
              Cancel
            </button>
            <button type="submit" className="btn btn--primary" disabled={s.busy} data-testid="fork-submit">
              {s.busy ? 'Starting…' : `Run from ${s.fromName}`}
            </button>
          </div>
        </form>
      </div>
    </div>
  );
}

/** A forked run's header note: "forked from <parent> at <node>". */
export function ForkOfNote() {
  // The fetched run says it; so does the stream's first event (run_forked).
  const parent = useRun((s) => s.run?.forkOf?.runId ?? s.log.fork?.parentRunId ?? '');
  const at = useRun((s) => s.run?.forkOf?.nodeId ?? s.log.fork?.fromNode ?? '');
  const name = useRun((s) => (at ? nodeName(s.nodes.find((n) => n.id === at), at) : ''));
  if (!parent) return null;
  const forkOf = { runId: parent, nodeId: at };
  return (
    <span className="sy-muted small fork-of" title={`forked from run ${parent} at ${name}`} data-testid="run-fork-of">
      forked from{' '}
      <a
        href={runPath(forkOf.runId)}
        onClick={(e) => {
          e.preventDefault();
          navigate(runPath(forkOf.runId));
        }}
        title={forkOf.runId}
        data-testid="run-fork-parent"
      >
        run {shortId(forkOf.runId)}
      </a>{' '}
      at {name}
    </span>
  );
}
