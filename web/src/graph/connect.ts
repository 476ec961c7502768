import { hasInputHandle, hasSourceHandle } from './handles';
import { INPUT_HANDLE, SUBAGENT_HANDLE, type NodeData } from './types';

type NodeLike = { id: string; type?: string; data: NodeData };
type EdgeLike = { source: string; target: string; sourceHandle?: string | null; targetHandle?: string | null };
export type ConnectionLike = {
  source: string | null;
  target: string | null;
  sourceHandle?: string | null;
  targetHandle?: string | null;
};

/**
 * Why a connection may not be drawn, or null when it may. Kept pure so the
 * canvas' isValidConnection and the unit tests agree.
 */
export function connectionProblem(
  c: ConnectionLike,
  nodes: ReadonlyMap<string, NodeLike>,
  edges: readonly EdgeLike[],
): string | null {
  if (!c.source || !c.target) return 'incomplete connection';
  if (c.source === c.target) return 'a node cannot connect to itself';
  const src = nodes.get(c.source);
  const dst = nodes.get(c.target);
  if (!src || !dst) return 'unknown node';
  if (!hasSourceHandle(src, c.sourceHandle)) return `node ${src.id} has no output "${c.sourceHandle ?? ''}"`;
  if (!hasInputHandle(dst)) return 'start nodes take no input';
  if ((c.targetHandle ?? INPUT_HANDLE) !== INPUT_HANDLE) return 'edges must end on the input handle';
  if (c.sourceHandle === SUBAGENT_HANDLE && dst.type !== 'agent') return 'subagents must be agent nodes';
  const dup = edges.some(
    (e) => e.source === c.source && e.target === c.target && (e.sourceHandle ?? null) === (c.sourceHandle ?? null),
  );
  if (dup) return 'these handles are already connected';
  return null;
}
