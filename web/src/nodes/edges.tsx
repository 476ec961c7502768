import { BaseEdge, getBezierPath, useStore, type EdgeProps, type ReactFlowState } from '@xyflow/react';
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

/** How far a back edge leaves its handle before it turns. */
const BACK_OUT = 24;
/** Clearance between a back edge and the nodes it passes under. */
const BACK_BELOW = 36;

/**
 * The lowest node bottom between two x positions: a back edge passes
 * under every node in its way, not through them.
 */
function lowestBottom(s: ReactFlowState, x0: number, x1: number, floor: number): number {
  let bottom = floor;
  for (const n of s.nodeLookup.values()) {
    const x = n.internals.positionAbsolute.x;
    const w = n.measured?.width ?? 0;
    if (x + w < x0 || x > x1) continue;
    bottom = Math.max(bottom, n.internals.positionAbsolute.y + (n.measured?.height ?? 0));
  }
  return bottom;
}

/**
 * A back edge (its target left of its source: a revise loop) goes right out
 * of its source, down below every node in between, left, and up into its
 * target's input, with rounded corners: visible, never hidden behind nodes.
 */
export function backEdgePath(sx: number, sy: number, tx: number, ty: number, bottom: number): string {
  const r = 10;
  const y = bottom + BACK_BELOW;
  const ox = sx + BACK_OUT;
  const ix = tx - BACK_OUT;
  return [
    `M ${sx},${sy}`,
    `L ${ox - r},${sy} Q ${ox},${sy} ${ox},${sy + r}`,
    `L ${ox},${y - r} Q ${ox},${y} ${ox - r},${y}`,
    `L ${ix + r},${y} Q ${ix},${y} ${ix},${y - r}`,
    `L ${ix},${ty + r} Q ${ix},${ty} ${ix + r},${ty}`,
    `L ${tx},${ty}`,
  ].join(' ');
}

/** Whether an edge runs backwards (right to left): a loop. */
export function isBackEdge(sx: number, tx: number): boolean {
  return tx < sx + 8;
}

/** Execution edge: solid; a back edge is routed under the nodes. */
export const ExecEdge = memo(function ExecEdge(p: EdgeProps) {
  const back = isBackEdge(p.sourceX, p.targetX);
  const bottom = useStore((s) =>
    back ? lowestBottom(s, p.targetX - BACK_OUT, p.sourceX + BACK_OUT, Math.max(p.sourceY, p.targetY)) : 0,
  );
  const path = back ? backEdgePath(p.sourceX, p.sourceY, p.targetX, p.targetY, bottom) : getBezierPath(p)[0];
  const c = useEdgeClass(p.id, 'sy-edge sy-edge--exec', p.selected);
  const fired = useEdgeFired({ source: p.source, target: p.target, sourceHandle: p.sourceHandleId });
  return (
    <g data-testid={`edge-${p.id}`} data-fired={fired ? 'true' : undefined} data-back={back ? 'true' : undefined}>
      {c.title && <title>{c.title}</title>}
      <BaseEdge
        id={p.id}
        path={path}
        className={`${c.className}${fired ? ' is-fired' : ''}${back ? ' is-back' : ''}`}
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
