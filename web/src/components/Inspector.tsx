import { Suspense, lazy, useEffect, useId, useMemo, useState, type ReactNode } from 'react';
import type { VariableContext } from '../editor/prompt';
import type { CompletionNode } from '../editor/variables';
import { conditionLabel } from '../graph/handles';
import { humanMessage } from '../graph/checks';
import { CONDITION_OPERATORS, agentData, conditionsOf, str, type AgentTools, type ConditionOperator, type FlowNode } from '../graph/types';
import {
  BUILTIN_HINTS,
  builtinOf,
  knownBuiltins,
  type BuiltinTool,
  extraPatterns,
  mcpOf,
  needsApproval,
  parsePatterns,
  setBuiltin,
  setExtraPatterns,
  setMcp,
  setNeedsApproval,
} from '../graph/agentTools';
import { useApp } from '../store/app';
import { useEditor } from '../store/editor';
import { deleteSelected as deleteSelection } from '../store/editing';
import { useYamlFile } from '../store/yamlFile';
import { useValidation } from '../store/validation';
import { TYPE_LABEL } from '../nodes/NodeShell';
import { isIncluded } from '../graph/groups';
import type { PromptEditorProps } from './PromptEditor';
import { GenericFields } from './YamlInspector';

// The code editor (CodeMirror) is its own chunk, fetched when the inspector first shows.
const loadPromptEditor = () => import('./PromptEditor');
const LazyPromptEditor = lazy(() => loadPromptEditor().then((m) => ({ default: m.PromptEditor })));

function PromptEditor(props: PromptEditorProps & { key?: string }) {
  return (
    <Suspense fallback={<div className="prompt-editor prompt-editor--loading" style={{ minHeight: (props.rows ?? 4) * 18 + 12 }} />}>
      <LazyPromptEditor {...props} />
    </Suspense>
  );
}

/** The graph's nodes for variable completion, read from the store when asked. */
function graphNodes(): CompletionNode[] {
  return useEditor.getState().nodes.map((n) => ({
    id: n.id,
    type: TYPE_LABEL[n.type ?? ''] ?? n.type,
    label: str(n.data.agentName) || undefined,
  }));
}

function useVariables(selfId: string): VariableContext {
  return useMemo(() => ({ nodes: graphNodes, selfId }), [selfId]);
}

const MULTI = 'multi' as const;

/** The single selected node, MULTI when several are, null when none. */
function useSelectedNode(): FlowNode | typeof MULTI | null {
  return useEditor((s) => {
    let found: FlowNode | null = null;
    for (const n of s.nodes) {
      if (!n.selected) continue;
      if (found) return MULTI;
      found = n;
    }
    return found;
  });
}

const FALLBACK_EFFORTS = ['minimal', 'low', 'medium', 'high'];

function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: ReactNode;
  children: (id: string, hintId: string | undefined) => ReactNode;
}) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id, hintId)}
      {hint && (
        <div className="field__hint" id={hintId}>
          {hint}
        </div>
      )}
    </div>
  );
}

function StartFields({ node }: { node: FlowNode }) {
  const update = useEditor((s) => s.updateNodeData);
  return (
    <Field label="Initial input" hint="Used when a run is started without its own input.">
      {(id, h) => (
        <PromptEditor
          key={`${node.id}:initialInput`}
          id={id}
          label="Initial input"
          describedBy={h}
          rows={5}
          value={str(node.data.initialInput)}
          onCommit={(v) => update(node.id, { initialInput: v }, 'initialInput')}
          testId="inspector-initialInput"
        />
      )}
    </Field>
  );
}

function AgentFields({ node, readOnly }: { node: FlowNode; readOnly: boolean }) {
  const update = useEditor((s) => s.updateNodeData);
  const config = useApp((s) => s.config);
  const a = agentData(node.data);
  const variables = useVariables(node.id);
  const models = config?.models ?? [];
  const efforts = config?.reasoningEfforts?.length ? config.reasoningEfforts : FALLBACK_EFFORTS;
  const set = (field: string, value: unknown) => update(node.id, { [field]: value }, field);
  const tools = a.tools ?? {};
  const setTool = (k: 'web_search' | 'subagents', v: boolean) =>
    update(node.id, { tools: { ...tools, [k]: v } }, `tools.${k}`);
  const setTools = (next: AgentTools, field: string) => {
    // No write without a change: a graph without these keys stays without them.
    if (JSON.stringify(next) !== JSON.stringify(tools)) update(node.id, { tools: next }, `tools.${field}`);
  };
  return (
    <>
      <Field label="Agent name">
        {(id) => (
          <input
            id={id}
            value={a.agentName ?? ''}
            readOnly={readOnly}
            onChange={(e) => set('agentName', e.target.value)}
            data-testid="inspector-agentName"
          />
        )}
      </Field>
      <div className="field-row">
        <Field label="Model">
          {(id) => (
            <select
              id={id}
              value={a.model ?? ''}
              disabled={readOnly}
              onChange={(e) => set('model', e.target.value)}
              data-testid="inspector-model"
            >
              <option value="">Default{config?.defaultModel ? ` (${config.defaultModel})` : ''}</option>
              {models.map((m) => (
                <option key={m} value={m}>
                  {m}
                </option>
              ))}
              {a.model && !models.includes(a.model) && <option value={a.model}>{a.model} (not offered)</option>}
            </select>
          )}
        </Field>
        <Field label="Reasoning effort">
          {(id) => (
            <select
              id={id}
              value={a.reasoningEffort ?? ''}
              disabled={readOnly}
              onChange={(e) => set('reasoningEffort', e.target.value)}
              data-testid="inspector-reasoningEffort"
            >
              <option value="">Default</option>
              {efforts.map((m) => (
                <option key={m} value={m}>
                  {m}
                </option>
              ))}
              {a.reasoningEffort && !efforts.includes(a.reasoningEffort) && (
                <option value={a.reasoningEffort}>{a.reasoningEffort}</option>
              )}
            </select>
          )}
        </Field>
      </div>
      <Field label="System prompt">
        {(id) => (
          <PromptEditor
            key={`${node.id}:systemPrompt:${readOnly}`}
            id={id}
            label="System prompt"
            rows={4}
            value={a.systemPrompt ?? ''}
            readOnly={readOnly}
            variables={variables}
            onCommit={(v) => set('systemPrompt', v)}
            testId="inspector-systemPrompt"
          />
        )}
      </Field>
      <Field
        label="User prompt"
        hint={
          <>
            <code>{'{{PREVIOUS_OUTPUT}}'}</code> inserts the output of the node before this one;{' '}
            <code>$node_id.output</code> inserts a specific node&apos;s output; <code>$REJECTION_REASON</code> the
            note of a rejection. Type <kbd>$</kbd> or <kbd>{'{{'}</kbd> for suggestions.
          </>
        }
      >
        {(id, h) => (
          <PromptEditor
            key={`${node.id}:userPrompt:${readOnly}`}
            id={id}
            label="User prompt"
            describedBy={h}
            rows={5}
            value={a.userPrompt ?? ''}
            readOnly={readOnly}
            variables={variables}
            onCommit={(v) => set('userPrompt', v)}
            testId="inspector-userPrompt"
          />
        )}
      </Field>
      <fieldset className="field field--checks">
        <legend>Tools</legend>
        <label className="check">
          <input
            type="checkbox"
            checked={tools.web_search === true}
            disabled={readOnly}
            onChange={(e) => setTool('web_search', e.target.checked)}
            data-testid="inspector-web_search"
          />
          Web search
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={tools.subagents === true}
            disabled={readOnly}
            onChange={(e) => setTool('subagents', e.target.checked)}
            data-testid="inspector-subagents"
          />
          Subagents <span className="sy-muted">(adds a dashed “subagents” handle; connect agents to it)</span>
        </label>
        <BuiltinTools tools={a.tools} readOnly={readOnly} onChange={setTools} />
        <ApprovalPatterns key={node.id} tools={a.tools} readOnly={readOnly} onChange={setTools} />
        <McpServers tools={a.tools} readOnly={readOnly} onChange={setTools} />
      </fieldset>
    </>
  );
}

type ToolsProps = { tools: AgentTools | undefined; readOnly: boolean; onChange: (next: AgentTools, field: string) => void };

/** The built-in tools checklist, each with its "needs approval" toggle. */
function BuiltinTools({ tools, readOnly, onChange }: ToolsProps) {
  const on = builtinOf(tools);
  const fromServer = useApp((s) => s.config?.builtinTools);
  const known = knownBuiltins(fromServer);
  // Names the node has that this server does not offer stay visible (to turn off).
  const shown = [...known, ...on.filter((b) => !known.includes(b))];
  return (
    <div className="tools-builtin" role="group" aria-labelledby="tools-builtin-title" data-testid="inspector-builtin-tools">
      <div className="tools__title" id="tools-builtin-title">
        Built-in tools <span className="sy-muted">(work in the run&apos;s workspace; none by default)</span>
      </div>
      <table className="tools-table">
        <tbody>
          {shown.map((b) => {
            const enabled = on.includes(b);
            const offered = known.includes(b);
            return (
              <tr key={b}>
                <td>
                  <label className="check">
                    <input
                      type="checkbox"
                      checked={enabled}
                      disabled={readOnly}
                      onChange={(e) => onChange(setBuiltin(tools, b, e.target.checked, known), 'builtin')}
                      data-testid={`inspector-tool-${b}`}
                    />
                    <b>{b}</b>
                  </label>
                </td>
                <td className="sy-muted small">
                  {offered ? (BUILTIN_HINTS[b as BuiltinTool] ?? '') : <span style={{ color: 'var(--warning)' }}>not offered by this server</span>}
                </td>
                <td>
                  <label className={`check tools-approve${enabled ? '' : ' is-off'}`} title={`Each ${b} call waits for a reviewer (inbox, canvas)`}>
                    <input
                      type="checkbox"
                      checked={needsApproval(tools, b)}
                      disabled={readOnly || !enabled}
                      onChange={(e) => onChange(setNeedsApproval(tools, b, e.target.checked, shown), 'approve')}
                      data-testid={`inspector-approve-${b}`}
                      aria-label={`${b} needs approval`}
                    />
                    needs approval
                  </label>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/**
 * More approval patterns, one per line. The text is the field's own while
 * typing (a blank line stays); the node gets the parsed list.
 */
function ApprovalPatterns({ tools, readOnly, onChange }: ToolsProps) {
  const fromServer = useApp((s) => s.config?.builtinTools);
  const known = [...knownBuiltins(fromServer), ...builtinOf(tools)];
  const stored = extraPatterns(tools, known);
  const [text, setText] = useState(() => stored.join('\n'));
  const storedKey = stored.join('\n');
  useEffect(() => {
    // Changed elsewhere (undo, another control): show the node's list.
    setText((cur) => (parsePatterns(cur).join('\n') === storedKey ? cur : storedKey));
  }, [storedKey]);
  const id = useId();
  return (
    <div className="field tools-patterns">
      <label htmlFor={id}>More tools that need approval</label>
      <textarea
        id={id}
        rows={3}
        value={text}
        readOnly={readOnly}
        placeholder={'Bash(git push:*)\nmcp__github__create_*'}
        onChange={(e) => {
          setText(e.target.value);
          onChange(setExtraPatterns(tools, parsePatterns(e.target.value), known), 'approve-patterns');
        }}
        aria-describedby={`${id}-hint`}
        data-testid="inspector-approve-patterns"
      />
      <div className="field__hint" id={`${id}-hint`}>
        One pattern per line: a tool name, a <code>*</code> glob (<code>mcp__github__create_*</code>) or a command prefix (
        <code>Bash(git push:*)</code>).
      </div>
    </div>
  );
}

/** The MCP servers of `serve --mcp-config` the agent may use. */
function McpServers({ tools, readOnly, onChange }: ToolsProps) {
  const configured = useApp((s) => s.config?.mcpServers);
  const chosen = mcpOf(tools);
  const names = (configured ?? []).map((m) => m.name).filter((n) => typeof n === 'string' && n !== '');
  const missing = chosen.filter((m) => !names.includes(m));
  return (
    <div className="tools-mcp" role="group" aria-labelledby="tools-mcp-title" data-testid="inspector-mcp">
      <div className="tools__title" id="tools-mcp-title">
        MCP servers
      </div>
      {names.length === 0 && (
        <div className="sy-muted small" data-testid="inspector-mcp-none">
          No MCP servers configured (start the server with <code>--mcp-config</code>).
        </div>
      )}
      {[...names, ...missing].map((m) => (
        <label className="check" key={m}>
          <input
            type="checkbox"
            checked={chosen.includes(m)}
            disabled={readOnly}
            onChange={(e) => onChange(setMcp(tools, m, e.target.checked), 'mcp')}
            data-testid={`inspector-mcp-${m}`}
          />
          {m}
          {missing.includes(m) && <span className="problem__sev" style={{ color: 'var(--warning)' }}> not configured on this server</span>}
        </label>
      ))}
    </div>
  );
}

function IfFields({ node, readOnly }: { node: FlowNode; readOnly: boolean }) {
  const edit = useEditor((s) => s.editConditions);
  const conds = conditionsOf(node.data);
  return (
    <fieldset className="field conditions" data-testid="inspector-conditions">
      <legend>Conditions</legend>
      <p className="field__hint">
        Checked against the previous node&apos;s output. Each condition has its own output handle; <b>else</b> is
        taken when none match.
      </p>
      <ol className="conditions__list">
        {conds.map((c, i) => (
          <li key={i} className="conditions__row" data-testid={`condition-row-${i}`}>
            <span className="conditions__idx" aria-hidden="true">
              {i + 1}
            </span>
            <select
              aria-label={`Condition ${i + 1} operator`}
              value={c.operator}
              disabled={readOnly}
              onChange={(e) => edit(node.id, { kind: 'update', index: i, patch: { operator: e.target.value as ConditionOperator } })}
              data-testid={`condition-operator-${i}`}
            >
              {CONDITION_OPERATORS.map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
            <input
              aria-label={`Condition ${i + 1} value`}
              value={c.value}
              readOnly={readOnly}
              placeholder="value"
              onChange={(e) => edit(node.id, { kind: 'update', index: i, patch: { value: e.target.value } })}
              data-testid={`condition-value-${i}`}
            />
            <button
              className="icon-btn"
              aria-label={`Move condition ${i + 1} up`}
              title="Move up"
              disabled={readOnly || i === 0}
              onClick={() => edit(node.id, { kind: 'move', from: i, to: i - 1 })}
              data-testid={`condition-up-${i}`}
            >
              ↑
            </button>
            <button
              className="icon-btn"
              aria-label={`Move condition ${i + 1} down`}
              title="Move down"
              disabled={readOnly || i === conds.length - 1}
              onClick={() => edit(node.id, { kind: 'move', from: i, to: i + 1 })}
              data-testid={`condition-down-${i}`}
            >
              ↓
            </button>
            <button
              className="icon-btn icon-btn--danger"
              aria-label={`Remove condition ${i + 1} (${conditionLabel(c)})`}
              title="Remove (its edges go too)"
              disabled={readOnly}
              onClick={() => edit(node.id, { kind: 'remove', index: i })}
              data-testid={`condition-remove-${i}`}
            >
              ×
            </button>
          </li>
        ))}
      </ol>
      <button className="btn" disabled={readOnly} onClick={() => edit(node.id, { kind: 'add' })} data-testid="condition-add">
        + Add condition
      </button>
    </fieldset>
  );
}

function ApprovalFields({ node, readOnly }: { node: FlowNode; readOnly: boolean }) {
  const update = useEditor((s) => s.updateNodeData);
  return (
    <Field label="Approval prompt" hint="Shown to the person approving, with the output being approved.">
      {(id, h) => (
        <PromptEditor
          key={`${node.id}:prompt:${readOnly}`}
          id={id}
          label="Approval prompt"
          describedBy={h}
          rows={4}
          value={str(node.data.prompt)}
          readOnly={readOnly}
          onCommit={(v) => update(node.id, { prompt: v }, 'prompt')}
          testId="inspector-approval-prompt"
        />
      )}
    </Field>
  );
}

function NodeProblems({ id }: { id: string }) {
  const problems = useValidation((s) => s.byNode[id]);
  if (!problems?.length) return null;
  const { nodes, edges } = useEditor.getState();
  return (
    <ul className="node-problems" aria-label="Problems on this node">
      {problems.map((p, i) => (
        <li key={i} className={`problem problem--${p.severity}`}>
          <span className="problem__sev">{p.severity}</span> {humanMessage(p.message, nodes, edges)}
        </li>
      ))}
    </ul>
  );
}

export function Inspector() {
  const sel = useSelectedNode();
  useEffect(() => {
    void loadPromptEditor();
  }, []);
  const readOnly = useEditor((s) => s.kind === 'yaml');
  const yamlEditable = useYamlFile((s) => s.editable);
  const canDelete = useEditor((s) => s.kind !== 'yaml') || yamlEditable;
  const deleteSelected = deleteSelection;
  if (sel === null)
    return (
      <div className="panel-empty" data-testid="inspector-empty">
        {readOnly
          ? canDelete
            ? 'Select a step to edit its main field, or edit the file in the Text view.'
            : 'YAML workflows are read-only here. Select a step to see its settings.'
          : 'Select a node to edit it. Add nodes from the palette (click or drag).'}
      </div>
    );
  if (sel === MULTI)
    return (
      <div className="panel-empty">
        Several nodes are selected.{' '}
        {canDelete && (
          <button className="btn btn--danger" onClick={deleteSelected}>
            Delete selected
          </button>
        )}
      </div>
    );
  const n = sel;
  const deletable = canDelete && !isIncluded(n);
  return (
    <div className="inspector" data-testid="inspector" aria-label={`Inspector for ${n.id}`}>
      <div className="inspector__head">
        <span className={`sy-node__badge badge--${n.type}`}>{TYPE_LABEL[n.type ?? ''] ?? n.type}</span>
        <span className="inspector__id">
          id <code>{n.id}</code>
        </span>
        {deletable && (
          <button className="btn btn--small btn--danger" onClick={deleteSelected} data-testid="inspector-delete" aria-label="Delete node">
            Delete
          </button>
        )}
      </div>
      <NodeProblems id={n.id} />
      {n.type === 'start' && <StartFields node={n} />}
      {n.type === 'agent' && <AgentFields node={n} readOnly={readOnly} />}
      {n.type === 'if' && <IfFields node={n} readOnly={readOnly} />}
      {n.type === 'approval' && <ApprovalFields node={n} readOnly={readOnly} />}
      {n.type === 'yaml' && <GenericFields node={n} />}
    </div>
  );
}
