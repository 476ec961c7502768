import { memo, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { LogLine } from '../run/reducer';
import { useRun, viewLog } from '../store/run';
import { TYPE_LABEL } from '../nodes/NodeShell';
import { fmtClock } from './format';

const WINDOW = 400;

const TYPE_TEXT: Record<string, string> = {
  step_start: 'start',
  start_prompt: 'prompt',
  llm_delta: 'model',
  llm_response: 'model',
  llm_error: 'model error',
  logic_check: 'check',
  wait_input: 'waiting',
  input_received: 'input',
  step_end: 'end',
  error: 'error',
  warning: 'warning',
  run_status: 'run',
  subagent_call_start: 'subagent call',
  subagent_call_end: 'subagent done',
  subagent_call_error: 'subagent error',
  llm_turn: 'model turn',
  tool_call: 'tool call',
  tool_result: 'tool result',
  output: 'output',
  process_start: 'process',
};

/** The first line of a long text, cut: a tool's whole output stays in the node's transcript. */
function firstLine(text: string, max = 160): string {
  const nl = text.indexOf('\n');
  const line = nl >= 0 ? text.slice(0, nl) : text;
  const more = nl >= 0 || line.length > max;
  return more ? `${line.slice(0, max)}…` : line;
}

function callSummary(content: string): string {
  try {
    const v = JSON.parse(content) as { parentNodeId?: string; subagentNodeId?: string; subagentName?: string; message?: string };
    const who = v.subagentName || v.subagentNodeId || '?';
    return `${v.parentNodeId ?? '?'} → ${who}${v.message ? `: ${v.message}` : ''}`;
  } catch {
    return content;
  }
}

const Line = memo(function Line({ line, label }: { line: LogLine; label: string }) {
  const text = line.type.startsWith('subagent_call_')
    ? callSummary(line.content)
    : line.type === 'tool_result'
      ? firstLine(line.content)
      : line.type === 'llm_turn' && !line.content
        ? '(no text)'
        : line.content;
  return (
    <li
      className={`log-line log-line--${line.type}${line.type === 'tool_result' ? ` log-line--tool-${line.status ?? 'ok'}` : ''}${line.streaming ? ' is-streaming' : ''}`}
      style={line.depth ? { paddingLeft: `${0.5 + line.depth * 1.25}rem` } : undefined}
      data-testid="log-line"
      data-seq={line.seq}
      data-node-id={line.nodeId}
      data-type={line.type}
    >
      <span className="log-line__time">{fmtClock(line.timestamp)}</span>
      {line.depth > 0 && (
        <span className="log-line__nest" aria-label={`nested depth ${line.depth}`}>
          ↳
        </span>
      )}
      <span className="log-line__node">{label}</span>
      <span className="log-line__type">{TYPE_TEXT[line.type] ?? line.type}</span>
      <span className="log-line__text">
        {line.meta && line.type === 'tool_result' && <span className="log-line__meta">{line.meta} </span>}
        {line.type === 'step_end' ? line.status : line.type === 'run_status' ? line.content : text}
        {line.meta && line.type === 'llm_turn' && <span className="log-line__meta"> — {line.meta}</span>}
        {line.meta && line.type === 'step_end' && <span className="log-line__meta"> — {line.meta}</span>}
        {line.type === 'step_end' && line.content && line.content !== line.status ? ` — ${line.content}` : ''}
        {line.note ? ` Note: ${line.note}` : ''}
      </span>
    </li>
  );
});

export function LogPanel() {
  const lines = useRun((s) => viewLog(s).lines);
  const filter = useRun((s) => s.filterNodeId);
  const setFilter = useRun((s) => s.setFilter);
  const nodes = useRun((s) => s.nodes);
  const [showAll, setShowAll] = useState(false);
  const [follow, setFollow] = useState(true);
  const listRef = useRef<HTMLOListElement>(null);

  const labels = useMemo(() => {
    const m: Record<string, string> = { system: 'run' };
    for (const n of nodes) {
      const d = n.data as { agentName?: string; label?: string };
      m[n.id] = d.agentName || d.label || `${TYPE_LABEL[n.type ?? ''] ?? n.type} ${n.id}`;
    }
    return m;
  }, [nodes]);
  const filtered = useMemo(
    () => (filter ? lines.filter((l) => l.nodeId === filter || l.content.includes(`"${filter}"`)) : lines),
    [lines, filter],
  );
  const hidden = showAll ? 0 : Math.max(0, filtered.length - WINDOW);
  const visible = hidden ? filtered.slice(hidden) : filtered;

  useLayoutEffect(() => {
    const el = listRef.current;
    if (el && follow) el.scrollTop = el.scrollHeight;
  }, [visible, follow]);
  useEffect(() => {
    const el = listRef.current;
    if (!el) return;
    const onScroll = () => setFollow(el.scrollHeight - el.scrollTop - el.clientHeight < 40);
    el.addEventListener('scroll', onScroll, { passive: true });
    return () => el.removeEventListener('scroll', onScroll);
  }, []);

  return (
    <section className="log" aria-label="Run log" data-testid="log-panel">
      <div className="log__bar">
        <h2 className="side-title">Log</h2>
        <label className="log__filter">
          Node
          <select
            value={filter ?? ''}
            onChange={(e) => setFilter(e.target.value || null)}
            data-testid="log-filter"
            aria-label="Filter log by node"
          >
            <option value="">All nodes</option>
            {nodes.map((n) => (
              <option key={n.id} value={n.id}>
                {labels[n.id]} ({n.id})
              </option>
            ))}
          </select>
        </label>
        <span className="sy-muted small" data-testid="log-count">
          {filtered.length} line{filtered.length === 1 ? '' : 's'}
        </span>
        {!follow && (
          <button className="btn btn--small" onClick={() => setFollow(true)}>
            Follow
          </button>
        )}
      </div>
      {hidden > 0 && (
        <button className="btn btn--small log__more" onClick={() => setShowAll(true)}>
          Show {hidden} earlier lines
        </button>
      )}
      <ol className="log__lines" ref={listRef} aria-live="off" tabIndex={0} aria-label="Log lines">
        {visible.map((l) => (
          <Line key={l.seq} line={l} label={labels[l.nodeId] ?? l.nodeId} />
        ))}
        {filtered.length === 0 && <li className="sy-muted log-empty">No events yet.</li>}
      </ol>
    </section>
  );
}
