import { useReactFlow } from '@xyflow/react';
import { useCallback, useMemo } from 'react';
import type { Problem } from '../api/types';
import { useEditor } from '../store/editor';
import { useCannotRun, useValidation } from '../store/validation';
import { humanMessage, nodeName } from '../graph/checks';

export function ProblemsPanel() {
  const listed = useValidation((s) => s.problems);
  const cannotRun = useCannotRun();
  const problems = useMemo(() => (cannotRun ? [cannotRun, ...listed] : listed), [cannotRun, listed]);
  const status = useValidation((s) => s.status);
  const selectOnly = useEditor((s) => s.selectOnly);
  const nodes = useEditor((s) => s.nodes);
  const edges = useEditor((s) => s.edges);
  const where = (p: Problem) => {
    if (p.nodeId) return nodeName(nodes.find((n) => n.id === p.nodeId), p.nodeId);
    const e = edges.find((x) => x.id === p.edgeId);
    return e ? `${nodeName(nodes.find((n) => n.id === e.source), e.source)} → ${nodeName(nodes.find((n) => n.id === e.target), e.target)}` : 'an edge';
  };
  const rf = useReactFlow();
  const go = useCallback(
    (p: Problem) => {
      const s = useEditor.getState();
      if (p.nodeId) {
        selectOnly(p.nodeId);
        const n = s.nodes.find((x) => x.id === p.nodeId);
        if (n) {
          const w = n.measured?.width ?? 220;
          const h = n.measured?.height ?? 80;
          void rf.setCenter(n.position.x + w / 2, n.position.y + h / 2, { zoom: Math.max(rf.getZoom(), 0.8), duration: 250 });
        }
      } else if (p.edgeId) {
        selectOnly(null, p.edgeId);
      }
    },
    [rf, selectOnly],
  );
  return (
    <div className="problems" data-testid="problems-panel">
      <div className="problems__status" role="status" aria-live="polite">
        {status === 'pending' && 'Checking…'}
        {status === 'unavailable' && 'Validation unavailable: the server could not be reached.'}
        {status === 'done' && problems.length === 0 && 'No problems found.'}
      </div>
      {problems.length > 0 && (
        <ul className="problems__list">
          {problems.map((p, i) => (
            <li key={i}>
              <button
                className={`problem problem--${p.severity}`}
                onClick={() => go(p)}
                data-testid={`problem-item-${i}`}
                data-problem-code={p.code}
                data-node-id={p.nodeId}
                data-edge-id={p.edgeId}
                title={p.nodeId ? `Select node ${p.nodeId}` : p.edgeId ? `Select edge ${p.edgeId}` : undefined}
              >
                <span className="problem__sev">{p.severity}</span>
                <span className="problem__msg">{humanMessage(p.message, nodes, edges)}</span>
                {(p.nodeId || p.edgeId) && <span className="problem__where">{where(p)}</span>}
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
