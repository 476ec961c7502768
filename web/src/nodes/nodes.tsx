import { useUpdateNodeInternals, type NodeProps } from '@xyflow/react';
import { memo, useEffect, useMemo, useRef, useState } from 'react';
import { sourceHandles } from '../graph/handles';
import { agentData, conditionsOf, str, type FlowNode } from '../graph/types';
import { toolChips } from '../graph/agentTools';
import type { GroupData } from '../graph/groups';
import { useApp } from '../store/app';
import { useRun } from '../store/run';
import { NodeShell } from './NodeShell';
import { usePendingApproval } from './mode';
import { ToolApprovalDetails } from '../components/ToolViews';

/**
 * Tells React Flow to re-measure handles when a node's handle set changes
 * after mount. Not on mount: React Flow measures new nodes itself, and a
 * call per node would cost a store update each when a big graph opens.
 */
function useHandlesChanged(id: string, signature: unknown) {
  const update = useUpdateNodeInternals();
  const first = useRef(signature);
  useEffect(() => {
    if (first.current === signature) return;
    first.current = signature;
    update(id);
  }, [id, signature, update]);
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

export const StartNode = memo(function StartNode({ id, data, selected }: NodeProps<FlowNode>) {
  const input = str(data.initialInput);
  const outputs = useMemo(() => sourceHandles({ type: 'start', data }), [data]);
  return (
    <NodeShell id={id} type="start" title="Start" selected={!!selected} input={false} outputs={outputs}>
      <div className="sy-node__line sy-muted">{input ? clip(input, 80) : 'No initial input'}</div>
    </NodeShell>
  );
});

/** True while the node waits for a reviewer on a tool call (run page). */
function useToolPending(id: string): boolean {
  return !!usePendingApproval(id)?.tool;
}

export const AgentNode = memo(function AgentNode({ id, data, selected }: NodeProps<FlowNode>) {
  const a = agentData(data);
  const toolPending = useToolPending(id);
  const tools = toolChips(a.tools);
  const defaultModel = useApp((s) => s.config?.defaultModel ?? '');
  const outputs = useMemo(() => sourceHandles({ type: 'agent', data }), [data]);
  const subOn = a.tools?.subagents === true;
  useHandlesChanged(id, subOn);
  const model = a.model || (defaultModel ? `${defaultModel} (default)` : 'default model');
  return (
    <NodeShell
      id={id}
      type="agent"
      title={a.agentName || id}
      selected={!!selected}
      input
      outputs={outputs}
      extraClass={toolPending ? 'is-pending has-tool-approval' : ''}
    >
      <div className="sy-node__line">
        <span className="sy-chip">{model}</span>
        {a.reasoningEffort && <span className="sy-chip">{a.reasoningEffort}</span>}
        {a.tools?.web_search && <span className="sy-chip sy-chip--tool">web</span>}
        {subOn && <span className="sy-chip sy-chip--sub">subagents</span>}
        {tools.map((c) => (
          <span key={c.text} className={`sy-chip sy-chip--tool${c.approve ? ' sy-chip--approve' : ''}`} title={c.title}>
            {c.text}
          </span>
        ))}
      </div>
      {a.userPrompt && <div className="sy-node__line sy-muted sy-node__prompt">{clip(a.userPrompt, 90)}</div>}
      <ApprovalForm nodeId={id} toolsOnly />
    </NodeShell>
  );
});

export const IfNode = memo(function IfNode({ id, data, selected }: NodeProps<FlowNode>) {
  const conds = conditionsOf(data);
  const outputs = useMemo(() => sourceHandles({ type: 'if', data }), [data]);
  useHandlesChanged(id, conds.length);
  return (
    <NodeShell id={id} type="if" title={`If · ${conds.length} condition${conds.length === 1 ? '' : 's'}`} selected={!!selected} input outputs={outputs}>
      {conds.length === 0 && <div className="sy-node__line sy-muted">No conditions</div>}
    </NodeShell>
  );
});

/**
 * Approve or reject what a node waits on, on the node itself: an approval
 * node's output, or (with `toolsOnly`, on agent and YAML steps) an agent's
 * tool call, shown with its arguments and diff.
 */
function ApprovalForm({ nodeId, toolsOnly = false }: { nodeId: string; toolsOnly?: boolean }) {
  const found = usePendingApproval(nodeId);
  const pending = toolsOnly && !found?.tool ? undefined : found;
  const busy = useRun((s) => !!s.busy[nodeId]);
  const decide = useRun((s) => s.decide);
  const toast = useApp((s) => s.toast);
  const [note, setNote] = useState('');
  const previous = useRun((s) => s.log.nodes[nodeId]?.lastRejection ?? null);
  if (!pending) return null;
  const go = (d: 'approve' | 'reject') =>
    decide(nodeId, d, note).then(
      () => setNote(''),
      (e: unknown) => toast(`Could not ${d}: ${(e as Error).message}`, 'error'),
    );
  return (
    // Clicks here answer the approval; they do not select the node.
    <div className="sy-approval nodrag nopan nowheel" onClick={(e) => e.stopPropagation()} data-testid={`node-approval-form-${nodeId}`}>
      {pending.tool ? (
        <ToolApprovalDetails tool={pending.tool} testPrefix={`node-approval-${nodeId}`} compact />
      ) : pending.input && (
        <pre className="sy-approval__input" aria-label="Output to approve">
          {pending.input}
        </pre>
      )}
      {previous && !pending.tool && (
        <div className="sy-approval__previous" data-testid={`node-approval-previous-${nodeId}`} title={previous}>
          Last round rejected: <q>{previous}</q>
        </div>
      )}
      <label className="sy-approval__note">
        <input
          value={note}
          onChange={(e) => setNote(e.target.value)}
          placeholder={pending.tool ? 'Note (a rejection tells the model why)' : 'Note (optional)'}
          data-testid={`node-approval-note-${nodeId}`}
          aria-label={`Approval note for ${nodeId} (on canvas)`}
        />
      </label>
      <div className="sy-approval__buttons">
        <button
          className="btn btn--approve"
          disabled={busy}
          onClick={() => void go('approve')}
          data-testid={`node-approve-${nodeId}`}
          aria-label={`Approve ${nodeId} (on canvas)`}
        >
          Approve
        </button>
        <button
          className="btn btn--reject"
          disabled={busy}
          onClick={() => void go('reject')}
          data-testid={`node-reject-${nodeId}`}
          aria-label={`Reject ${nodeId} (on canvas)`}
        >
          Reject
        </button>
      </div>
    </div>
  );
}

export const ApprovalNode = memo(function ApprovalNode({ id, data, selected }: NodeProps<FlowNode>) {
  const outputs = useMemo(() => sourceHandles({ type: 'approval', data }), [data]);
  const pending = usePendingApproval(id);
  const prompt = str(data.prompt);
  return (
    <NodeShell
      id={id}
      type="approval"
      title="Approval"
      selected={!!selected}
      input
      outputs={outputs}
      extraClass={pending ? 'is-pending' : ''}
    >
      <div className="sy-node__line sy-node__prompt">{prompt ? clip(prompt, 120) : <span className="sy-muted">No prompt</span>}</div>
      <ApprovalForm nodeId={id} />
    </NodeShell>
  );
});

export const YamlNode = memo(function YamlNode({ id, data, selected }: NodeProps<FlowNode>) {
  const outputs = useMemo(() => sourceHandles({ type: 'yaml', data }), [data]);
  const detail = str(data.detail);
  const toolPending = useToolPending(id);
  const group = str(data.group);
  return (
    <NodeShell
      id={id}
      type="yaml"
      badge={str(data.kind) || 'step'}
      title={str(data.label) || id}
      selected={!!selected}
      input
      outputs={outputs}
      extraClass={[toolPending ? 'is-pending has-tool-approval' : '', group ? 'in-group' : ''].filter(Boolean).join(' ')}
    >
      {detail && <div className="sy-node__line sy-muted sy-node__prompt">{clip(detail, 90)}</div>}
      <JoinRows id={id} when={str(data.when)} rule={str(data.triggerRule)} />
      <ApprovalForm nodeId={id} toolsOnly />
    </NodeShell>
  );
});

/** A YAML step's `when:` condition and non-default trigger_rule, on the node (its incoming edges say it too). */
function JoinRows({ id, when, rule }: { id: string; when: string; rule: string }) {
  const showRule = rule !== '' && rule !== 'all_success';
  if (!when && !showRule) return null;
  return (
    <>
      {when && (
        <div className="sy-node__line sy-node__join" title={`when: ${when}\nThe step runs only if this holds; otherwise it is skipped.`} data-testid={`node-when-${id}`}>
          <span className="sy-chip sy-chip--when">when</span> <code>{clip(when, 56)}</code>
        </div>
      )}
      {showRule && (
        <div className="sy-node__line sy-node__join" title={`trigger_rule: ${rule}\nHow the step joins its dependencies.`} data-testid={`node-rule-${id}`}>
          <span className="sy-chip sy-chip--rule">trigger_rule</span> <code>{rule}</code>
        </div>
      )}
    </>
  );
}

/** A YAML include's box, behind the nodes it inlined (see graph/groups.ts). */
export const IncludeGroupNode = memo(function IncludeGroupNode({ data }: NodeProps<FlowNode>) {
  const d = data as GroupData;
  return (
    <div className="sy-group" data-testid={`group-${d.group}`} data-group-label={d.label}>
      <div className="sy-group__label" title={`Inlined by the include step "${d.group}"; read-only here (edit ${d.label})`}>
        <span className="sy-group__kind">include</span> <b>{d.label}</b> <code className="sy-group__id">{d.group}</code>
      </div>
    </div>
  );
});
