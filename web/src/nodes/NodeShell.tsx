import { Handle, Position } from '@xyflow/react';
import { memo, type ReactNode } from 'react';
import type { HandleSpec } from '../graph/handles';
import { useForkParent, useNodeMeta, useNodeProblems, useNodeReused, useNodeSkipReason, useNodeStatus, useNodeWaitTool, waitToolText } from './mode';
import { shortId } from '../components/format';
import { useSearchMark } from '../store/canvasSearch';

export const TYPE_LABEL: Record<string, string> = {
  start: 'Start',
  agent: 'Agent',
  if: 'If',
  approval: 'Approval',
  yaml: 'Step',
};

const STATUS_TEXT: Record<string, string> = {
  idle: 'idle',
  running: 'running',
  completed: 'done',
  failed: 'failed',
  skipped: 'skipped',
  waiting: 'waiting',
  stopped: 'stopped',
};

type Props = {
  id: string;
  type: string;
  title: string;
  selected: boolean;
  input: boolean;
  outputs: HandleSpec[];
  children?: ReactNode;
  /** Overrides the type badge, e.g. a YAML step kind. */
  badge?: string;
  extraClass?: string;
};

/**
 * Frame shared by every node: header, body, input handle on the left, one
 * labelled row per output handle on the right (subagent handle at the
 * bottom), plus run status and validation markers.
 */
export const NodeShell = memo(function NodeShell(p: Props) {
  const problems = useNodeProblems(p.id);
  const status = useNodeStatus(p.id);
  const meta = useNodeMeta(p.id);
  const waitTool = useNodeWaitTool(p.id);
  const mark = useSearchMark(p.id);
  const skipReason = useNodeSkipReason(p.id);
  const reused = useNodeReused(p.id);
  const parent = useForkParent();
  const waitText = status === 'waiting' && waitTool ? waitToolText(waitTool) : '';
  const errs = problems.filter((x) => x.severity === 'error').length;
  const warns = problems.length - errs;
  const exec = p.outputs.filter((h) => h.kind === 'exec');
  const sub = p.outputs.find((h) => h.kind === 'subagent');
  const cls = [
    'sy-node',
    `sy-node--${p.type}`,
    p.selected ? 'is-selected' : '',
    errs ? 'has-error' : warns ? 'has-warning' : '',
    status ? `run-${status}` : '',
    reused ? 'is-reused' : '',
    p.extraClass ?? '',
    mark === 'current' ? 'is-match is-current-match' : mark === 'match' ? 'is-match' : '',
  ]
    .filter(Boolean)
    .join(' ');
  const problemText = problems.map((x) => `${x.severity}: ${x.message}`).join('\n');
  return (
    <div
      className={cls}
      data-testid={`node-${p.id}`}
      data-node-type={p.type}
      data-run-status={status ?? undefined}
      data-search={mark || undefined}
      aria-label={`${TYPE_LABEL[p.type] ?? p.type} node ${p.title}${status ? `, ${status}` : ''}${skipReason ? ` (${skipReason})` : ''}${reused ? `, ${reused === 'pinned' ? 'edited output' : 'reused'} from run ${parent}` : ''}${waitText ? ` for approval of ${waitText}` : ''}${errs ? `, ${errs} error(s)` : ''}`}
    >
      {p.input && <Handle type="target" position={Position.Left} id="input" className="sy-handle sy-handle--in" />}
      <div className="sy-node__head">
        <span className="sy-node__badge">{p.badge ?? TYPE_LABEL[p.type] ?? p.type}</span>
        <span className="sy-node__title" title={p.title}>
          {p.title}
        </span>
        {status && status !== 'idle' && (
          <span className={`sy-status sy-status--${status}`} data-testid={`node-status-${p.id}`}>
            {STATUS_TEXT[status] ?? status}
          </span>
        )}
        {problems.length > 0 && (
          <span
            className={`sy-node__problems ${errs ? 'is-error' : 'is-warning'}`}
            title={problemText}
            data-testid={`node-problems-${p.id}`}
            aria-label={`${problems.length} problem(s): ${problemText}`}
          >
            {errs ? '!' : '⚠'} {problems.length}
          </span>
        )}
      </div>
      {waitText && (
        <div className="sy-node__wait" data-testid={`node-wait-tool-${p.id}`} title={waitTool?.prompt}>
          <span aria-hidden="true">‖</span> waits for approval of <b>{waitText}</b>
        </div>
      )}
      {status === 'skipped' && skipReason && (
        <div className="sy-node__skip" data-testid={`node-skip-${p.id}`} title={skipReason}>
          skipped: {skipReason}
        </div>
      )}
      {reused && (
        <div
          className={`sy-node__reused sy-node__reused--${reused}`}
          data-testid={`node-reused-${p.id}`}
          data-reused={reused}
          title={reused === 'pinned' ? `Did not run: took the output you edited (run ${parent} had another)` : `Did not run: took its output from run ${parent}`}
        >
          {reused === 'pinned' ? (
            <>
              <span aria-hidden="true">✎</span> edited output, not run
            </>
          ) : (
            <>
              <span aria-hidden="true">↺</span> reused from run <code>{shortId(parent)}</code>
            </>
          )}
        </div>
      )}
      {meta && (
        <div className="sy-node__meta" data-testid={`node-meta-${p.id}`}>
          {meta}
        </div>
      )}
      {p.children && <div className="sy-node__body">{p.children}</div>}
      {exec.length > 0 && (
        <div className="sy-node__outs">
          {exec.map((h) => (
            <div className="sy-node__out" key={h.id} data-handle={h.id}>
              <span className="sy-node__outlabel" title={h.label}>
                {h.label}
              </span>
              <Handle
                type="source"
                position={Position.Right}
                id={h.id}
                className={`sy-handle sy-handle--out sy-handle--${h.id.startsWith('condition-') ? 'condition' : h.id}`}
              />
            </div>
          ))}
        </div>
      )}
      {sub && (
        <>
          <span className="sy-node__sublabel">subagents ↓</span>
          <Handle type="source" position={Position.Bottom} id={sub.id} className="sy-handle sy-handle--subagent" />
        </>
      )}
    </div>
  );
});
