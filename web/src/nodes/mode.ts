import { createContext, useContext } from 'react';
import type { Problem, PendingApproval } from '../api/types';
import { edgeFired, nodeMeta, type NodeRunStatus, type WaitTool } from '../run/reducer';
import { useRun, viewLog } from '../store/run';
import { useValidation } from '../store/validation';

export type CanvasMode = 'edit' | 'run';
export const CanvasModeContext = createContext<CanvasMode>('edit');

export function useCanvasMode(): CanvasMode {
  return useContext(CanvasModeContext);
}

const NONE: Problem[] = [];

/** Problems naming this node; each node subscribes only to its own entry. */
export function useNodeProblems(id: string): Problem[] {
  const mode = useCanvasMode();
  return useValidation((s) => (mode === 'edit' ? s.byNode[id] : undefined)) ?? NONE;
}

export function useEdgeProblems(id: string): Problem[] {
  const mode = useCanvasMode();
  return useValidation((s) => (mode === 'edit' ? s.byEdge[id] : undefined)) ?? NONE;
}

/** Run status of this node; re-renders only when its own status changes. */
export function useNodeStatus(id: string): NodeRunStatus | null {
  const mode = useCanvasMode();
  return useRun((s) => (mode === 'run' ? (viewLog(s).nodes[id]?.status ?? 'idle') : null));
}

export function usePendingApproval(id: string): PendingApproval | undefined {
  const mode = useCanvasMode();
  return useRun((s) => {
    if (mode !== 'run') return undefined;
    if (s.replay) return undefined; // a replay shows the past, not what to answer now
    const st = s.log.nodes[id]?.status;
    // Once the stream shows the node moved on, the fetched list is stale.
    if (st === 'completed' || st === 'failed' || st === 'skipped' || st === 'stopped') return undefined;
    return s.run?.pendingApprovals?.find((p) => p.nodeId === id);
  });
}

/** Visits, duration and tokens of this node in run mode ("" otherwise). */
export function useNodeMeta(id: string): string {
  const mode = useCanvasMode();
  return useRun((s) => (mode === 'run' ? nodeMeta(viewLog(s).nodes[id]) : ''));
}

/** Whether this edge carried the run (run mode only). */
export function useEdgeFired(e: { source: string; target: string; sourceHandle?: string | null; subagent?: boolean }): boolean {
  const mode = useCanvasMode();
  return useRun((s) => mode === 'run' && edgeFired(viewLog(s), e));
}

/** The tool call this node waits on a reviewer for (run mode; replay too). */
export function useNodeWaitTool(id: string): WaitTool | null {
  const mode = useCanvasMode();
  return useRun((s) => (mode === 'run' ? (viewLog(s).nodes[id]?.waitTool ?? null) : null));
}

/** "Write calc.sh" from a wait prompt "Allow Write calc.sh?", else the tool's name. */
export function waitToolText(w: WaitTool): string {
  const m = /^Allow (.+)\?$/s.exec(w.prompt.trim());
  return m ? m[1]! : w.tool;
}

/** Why this node was skipped (run mode; "" when it was not). */
export function useNodeSkipReason(id: string): string {
  const mode = useCanvasMode();
  return useRun((s) => (mode === 'run' ? (viewLog(s).nodes[id]?.skipReason ?? '') : ''));
}

/**
 * Whether this node of a forked run took its parent run's result instead of
 * running: 'pinned' when the person edited that output, 'reused' when it is
 * the parent's as stored, '' otherwise (run mode only).
 */
export function useNodeReused(id: string): '' | 'reused' | 'pinned' {
  const mode = useCanvasMode();
  return useRun((s) => {
    if (mode !== 'run') return '';
    const log = viewLog(s);
    if (!log.nodes[id]?.reused) return '';
    return log.fork?.reused[id]?.edited ? 'pinned' : 'reused';
  });
}

/** The run a forked run's reused results came from ('' when it is no fork). */
export function useForkParent(): string {
  return useRun((s) => viewLog(s).fork?.parentRunId ?? s.run?.forkOf?.runId ?? '');
}
