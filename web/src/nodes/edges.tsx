import { BaseEdge, getBezierPath, type EdgeProps } from '@xyflow/react';
import { memo } from 'react';
import { useEdgeFired, useEdgeProblems } from './mode';

function useEdgeClass(id: string, base: string, selected: boolean | undefined) {
  const problems = useEdgeProblems(id);
  const errs = problems.some((p) => p.severity === 'error');
  return {
    className: `${base}${selected ? ' is-selected' : ''}${problems.length ? (errs ? ' has-error' : ' has-warning') : ''}`,
    title: problems.map((p) => p.message).join('\n'),
    marker: errs ? 'url(#sy-arrow-error)' : base.includes('subagent') ? 'url(#sy-arrow-sub)' : 'url(#sy-arrow)',
  };
}

/** Execution edge: solid. */
export const ExecEdge = memo(function ExecEdge(p: EdgeProps) {
  const [path] = getBezierPath(p);
  const c = useEdgeClass(p.id, 'sy-edge sy-edge--exec', p.selected);
  const fired = useEdgeFired({ source: p.source, target: p.target, sourceHandle: p.sourceHandleId });
  return (
    <g data-testid={`edge-${p.id}`} data-fired={fired ? 'true' : undefined}>
      {c.title && <title>{c.title}</title>}
      <BaseEdge
        id={p.id}
        path={path}
        className={`${c.className}${fired ? ' is-fired' : ''}`}
        markerEnd={fired && !c.className.includes('has-error') ? 'url(#sy-arrow-fired)' : c.marker}
        interactionWidth={16}
      />
    </g>
  );
});

/** Subagent (tool) edge: dashed, its own colour. */
export const SubagentEdge = memo(function SubagentEdge(p: EdgeProps) {
  const [path] = getBezierPath(p);
  const c = useEdgeClass(p.id, 'sy-edge sy-edge--subagent', p.selected);
  const fired = useEdgeFired({ source: p.source, target: p.target, subagent: true });
  return (
    <g data-testid={`edge-${p.id}`} data-edge-kind="subagent" data-fired={fired ? 'true' : undefined}>
      {c.title && <title>{c.title}</title>}
      <BaseEdge id={p.id} path={path} className={`${c.className}${fired ? ' is-fired' : ''}`} markerEnd={c.marker} interactionWidth={16} />
    </g>
  );
});

/** Arrow markers referenced by the edges (any inline SVG in the page can hold them). */
export function EdgeMarkers() {
  return (
    <svg width="0" height="0" style={{ position: 'absolute' }} aria-hidden="true">
      <defs>
        {[
          ['sy-arrow', 'var(--edge)'],
          ['sy-arrow-sub', 'var(--edge-sub)'],
          ['sy-arrow-error', 'var(--danger)'],
          ['sy-arrow-fired', 'var(--edge-fired)'],
        ].map(([id, color]) => (
          <marker key={id} id={id} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" style={{ fill: color }} />
          </marker>
        ))}
      </defs>
    </svg>
  );
}
