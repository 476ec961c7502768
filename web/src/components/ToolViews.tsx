// Views of an agent's tool calls: the call waiting for a reviewer (inbox,
// run panel, canvas) and a node's transcript of turns and calls.
import { memo, useMemo } from 'react';
import type { ToolApproval } from '../api/types';
import { fmtDuration } from '../run/reducer';
import {
  diffLines,
  fmtBytes,
  prettyArgs,
  sessionLabel,
  sessionsOf,
  toolName,
  transcriptTree,
  type CallNode,
  type ToolCallStatus,
  type Transcript,
  type TurnNode,
} from '../run/transcript';

/** The tool's name as people read it, with its kind (MCP server, subagent) as a chip. */
export function ToolLabel({ tool }: { tool: string }) {
  const t = toolName(tool);
  return (
    <span className="tool-label" title={tool}>
      {t.kind === 'subagent' && <span className="tool-chip tool-chip--subagent">subagent</span>}
      {t.kind === 'mcp' && <span className="tool-chip tool-chip--mcp">MCP {t.server}</span>}
      <b className="tool-label__name">{t.label}</b>
    </span>
  );
}

/** The summary without the tool's name it starts with ("Read calc.sh" → "calc.sh"). */
export function summaryRest(summary: string, tool: string): string {
  if (!summary.startsWith(tool)) return summary;
  return summary.slice(tool.length).replace(/^:?\s*/, '');
}

/** A unified diff with added, removed and hunk lines marked. */
export const DiffView = memo(function DiffView({ diff, testId }: { diff: string; testId?: string }) {
  const lines = useMemo(() => diffLines(diff), [diff]);
  return (
    <pre className="code-block diff" data-testid={testId} aria-label="Diff of the change">
      {lines.map((l, i) => (
        <span key={i} className={`diff__line diff__line--${l.kind}`}>
          {l.text}
          {'\n'}
        </span>
      ))}
    </pre>
  );
});

/**
 * What a reviewer decides on: the tool, its arguments (indented JSON) and,
 * for Write and Edit, the change as a diff. `compact` is the canvas' size.
 */
export function ToolApprovalDetails({ tool, testPrefix, compact = false }: { tool: ToolApproval; testPrefix: string; compact?: boolean }) {
  const args = prettyArgs(tool.arguments);
  return (
    <div className={`tool-approval${compact ? ' tool-approval--compact' : ''}`} data-testid={`${testPrefix}-tool`} data-tool={tool.tool}>
      <div className="tool-approval__head">
        <span className="tool-approval__kicker">Tool call</span> <ToolLabel tool={tool.tool} />
      </div>
      {tool.diff && (
        <details open className="tool-approval__block">
          <summary>Change</summary>
          <DiffView diff={tool.diff} testId={`${testPrefix}-diff`} />
        </details>
      )}
      <details open={!tool.diff || !compact} className="tool-approval__block">
        <summary>Arguments</summary>
        <pre className="code-block tool-approval__args" data-testid={`${testPrefix}-args`}>
          {args}
        </pre>
      </details>
    </div>
  );
}

const STATUS_TEXT: Record<ToolCallStatus, string> = {
  running: 'running',
  waiting: 'waiting for approval',
  ok: 'ok',
  error: 'error',
  denied: 'denied',
  stopped: 'no result',
};
const STATUS_ICON: Record<ToolCallStatus, string> = {
  running: '…',
  waiting: '‖',
  ok: '✓',
  error: '✗',
  denied: '⊘',
  stopped: '■',
};

function CallItem({ node }: { node: CallNode }) {
  const c = node.call;
  const rest = summaryRest(c.summary, c.tool);
  const facts: string[] = [];
  if (c.durationMs !== null) facts.push(fmtDuration(c.durationMs));
  if (c.bytes !== null) facts.push(fmtBytes(c.bytes));
  return (
    <li className={`tcall tcall--${c.status}`} data-testid={`tool-call-${c.callId}`} data-status={c.status} data-tool={c.tool}>
      <div className="tcall__head">
        <span className={`tcall__status tcall__status--${c.status}`} title={STATUS_TEXT[c.status]} aria-label={STATUS_TEXT[c.status]}>
          {STATUS_ICON[c.status]}
        </span>
        <ToolLabel tool={c.tool} />
        {rest && (
          <span className="tcall__summary" title={c.summary}>
            {rest}
          </span>
        )}
        <span className="tcall__facts" data-testid={`tool-facts-${c.callId}`}>
          <span className={`tcall__state tcall__state--${c.status}`}>{STATUS_TEXT[c.status]}</span>
          {facts.length > 0 && ` · ${facts.join(' · ')}`}
        </span>
      </div>
      {c.cut && c.bytes !== null && (
        <div className="tcall__note" data-testid={`tool-cut-${c.callId}`}>
          Output cut: the model saw the first 30,000 of {c.bytes.toLocaleString('en-US')} bytes.
        </div>
      )}
      {c.decision && (
        <div className={`tcall__decision tcall__decision--${c.decision.decision}`} data-testid={`tool-decision-${c.callId}`}>
          {c.decision.decision === 'approve' ? 'Approved' : 'Rejected'} by the reviewer
          {c.decision.note ? `: ${c.decision.note}` : ''}
        </div>
      )}
      <details className="tcall__more">
        <summary>Arguments</summary>
        <pre className="code-block" data-testid={`tool-args-${c.callId}`}>
          {prettyArgs(c.args)}
        </pre>
      </details>
      {c.result !== null ? (
        <details className="tcall__more">
          <summary>{c.status === 'ok' ? 'Output' : c.status === 'denied' ? 'What the model was told' : 'Output (error)'}</summary>
          <pre className="code-block" data-testid={`tool-output-${c.callId}`}>
            {c.result || '(empty)'}
          </pre>
        </details>
      ) : (
        c.live && (
          <pre className="code-block tcall__live" data-testid={`tool-live-${c.callId}`} aria-label="Output so far">
            {c.live}
          </pre>
        )
      )}
      {node.children.length > 0 && (
        <div className="transcript transcript--nested" aria-label={`Turns of ${c.tool}`}>
          <Turns turns={node.children} />
        </div>
      )}
    </li>
  );
}

function Turns({ turns }: { turns: readonly TurnNode[] }) {
  return (
    <ol className="transcript__turns">
      {turns.map((t) => (
        <li key={t.key} className="tturn" data-testid="transcript-turn" data-turn={t.turnNo}>
          <div className="tturn__head">
            <span className="tturn__no">Turn {t.turnNo}</span>
            {t.turn?.text ? <span className="tturn__text">{t.turn.text}</span> : <span className="sy-muted small">(no text)</span>}
          </div>
          {t.calls.length > 0 && (
            <ul className="tturn__calls">
              {t.calls.map((c) => (
                <CallItem key={c.call.key} node={c} />
              ))}
            </ul>
          )}
        </li>
      ))}
    </ol>
  );
}

/** A node's turns and tool calls, nested (subagent calls under their call). */
export const TranscriptView = memo(function TranscriptView({ transcript }: { transcript: Transcript }) {
  const tree = useMemo(() => transcriptTree(transcript), [transcript]);
  const sessions = sessionsOf(tree);
  if (tree.length === 0) return null;
  return (
    <div className="transcript" data-testid="node-transcript">
      {sessions.length > 1
        ? sessions.map((s) => (
            <section key={s} className="transcript__session" aria-label={sessionLabel(s)}>
              <h4 className="transcript__session-title">{sessionLabel(s)}</h4>
              <Turns turns={tree.filter((t) => t.session === s)} />
            </section>
          ))
        : <Turns turns={tree} />}
    </div>
  );
});
