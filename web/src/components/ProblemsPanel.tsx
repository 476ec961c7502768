import { useReactFlow } from '@xyflow/react';
import { useCallback } from 'react';
import type { Problem } from '../api/types';
import { useEditor } from '../store/editor';
import { useValidation } from '../store/validation';

export function ProblemsPanel() {
  const problems = useValidation((s) => s.problems);
  const status = useValidation((s) => s.status);
  const selectOnly = useEditor((s) => s.selectOnly);
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
                <span className="problem__msg">{p.message}</span>
                {(p.nodeId || p.edgeId) && <span className="problem__where">{p.nodeId ?? p.edgeId}</span>}
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
