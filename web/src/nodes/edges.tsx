import { BaseEdge, EdgeLabelRenderer, getBezierPath, useStore, type EdgeProps, type ReactFlowState } from '@xyflow/react';
import { memo } from 'react';
import { labelPoint, roundedPath } from '../graph/route';
import { useEdgeFired, useEdgeProblems } from './mode';
import { useRoute } from './routes';

/** Edges shorter than this (flow px) carry no `when:` / trigger_rule label. */
const LABEL_ROOM = 220;

/** Short words for a YAML step's trigger_rule, on the edges into it (all_success, the default, has none). */
export const RULE_TEXT: Record<string, string> = {
  one_success: 'any one succeeds',
  all_done: 'after all finish',
  none_failed_min_one_success: 'none failed, one succeeded',
};

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** What a YAML step's `when:` and `trigger_rule` say, for the edges into it ("" when neither). */
export function joinLabel(data: Record<string, unknown> | undefined): { text: string; title: string; when: boolean } {
  const when = typeof data?.when === 'string' ? data.when : '';
  const rule = typeof data?.triggerRule === 'string' ? data.triggerRule : '';
  const parts = [when ? `when ${clip(when, 26)}` : '', RULE_TEXT[rule] ?? ''].filter(Boolean);
  const title = [when ? `when: ${when}` : '', rule && rule !== 'all_success' ? `trigger_rule: ${rule}` : ''].filter(Boolean).join('\n');
  return { text: parts.join(' · '), title, when: !!when };
}

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

/** The `when:` / trigger_rule words of the step an edge enters (YAML projections carry them). */
function useJoin(target: string) {
  const when = useStore((s) => {
    const d = s.nodeLookup.get(target)?.data as Record<string, unknown> | undefined;
    return d && (d.when || d.triggerRule) ? `${String(d.when ?? '')}\u0000${String(d.triggerRule ?? '')}` : '';
  });
  if (!when) return null;
  const [w, r] = when.split('\u0000');
  const j = joinLabel({ when: w, triggerRule: r });
  return j.text ? j : null;
}

/**
 * Execution edge: solid, routed around the nodes in orthogonal segments
 * (a curve when there is no way round, while an end is dragged, or on very
 * large graphs); a back edge drawn as a curve goes under the nodes. An
 * edge into a YAML step with `when:` is dashed, and says what gates it.
 */
export const ExecEdge = memo(function ExecEdge(p: EdgeProps) {
  const back = isBackEdge(p.sourceX, p.targetX);
  const route = useRoute(p);
  const bottom = useStore((s) =>
    back && !route ? lowestBottom(s, p.targetX - BACK_OUT, p.sourceX + BACK_OUT, Math.max(p.sourceY, p.targetY)) : 0,
  );
  const [bezier, bx, by] = getBezierPath(p);
  const path = route ? roundedPath(route) : back ? backEdgePath(p.sourceX, p.sourceY, p.targetX, p.targetY, bottom) : bezier;
  const label = route ? labelPoint(route) : { x: bx, y: by };
  const join = useJoin(p.target);
  // A short edge has no room for words: the step it enters says them (its dash says "conditional").
  const roomy = Math.hypot(p.targetX - p.sourceX, p.targetY - p.sourceY) > LABEL_ROOM;
  const c = useEdgeClass(p.id, 'sy-edge sy-edge--exec', p.selected);
  const fired = useEdgeFired({ source: p.source, target: p.target, sourceHandle: p.sourceHandleId });
  return (
    <g
      data-testid={`edge-${p.id}`}
      data-fired={fired ? 'true' : undefined}
      data-back={back ? 'true' : undefined}
      data-routed={route ? 'true' : undefined}
      data-when={join?.when ? 'true' : undefined}
    >
      {(c.title || join) && <title>{[c.title, join?.title].filter(Boolean).join('\n')}</title>}
      <BaseEdge
        id={p.id}
        path={path}
        className={`${c.className}${fired ? ' is-fired' : ''}${back ? ' is-back' : ''}${join?.when ? ' is-conditional' : ''}`}
        markerEnd={fired && !c.className.includes('has-error') ? 'url(#sy-arrow-fired)' : c.marker}
        interactionWidth={16}
      />
      {join && roomy && (
        <EdgeLabelRenderer>
          <div
            className={`sy-edge-label nodrag nopan${join.when ? ' sy-edge-label--when' : ''}`}
            style={{ transform: `translate(-50%, -50%) translate(${label.x}px, ${label.y}px)` }}
            title={join.title}
            data-testid={`edge-label-${p.id}`}
          >
            {join.text}
          </div>
        </EdgeLabelRenderer>
      )}
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
