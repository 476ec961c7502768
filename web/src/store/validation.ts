import { create } from 'zustand';
import { api, ApiError } from '../api/client';
import type { Problem } from '../api/types';
import { toGraph } from '../graph/serialize';
import { useApp } from './app';
import { useEditor } from './editor';

export type ValidationStatus = 'idle' | 'pending' | 'done' | 'unavailable';

type ValidationState = {
  status: ValidationStatus;
  /** Editor revision the problems belong to. */
  rev: number;
  problems: Problem[];
  byNode: Record<string, Problem[]>;
  byEdge: Record<string, Problem[]>;
  errors: number;
  warnings: number;
};

export const useValidation = create<ValidationState>(() => ({
  status: 'idle',
  rev: -1,
  problems: [],
  byNode: {},
  byEdge: {},
  errors: 0,
  warnings: 0,
}));

export function indexProblems(problems: Problem[]): Pick<ValidationState, 'byNode' | 'byEdge' | 'errors' | 'warnings'> {
  const byNode: Record<string, Problem[]> = {};
  const byEdge: Record<string, Problem[]> = {};
  let errors = 0;
  let warnings = 0;
  for (const p of problems) {
    if (p.severity === 'error') errors++;
    else warnings++;
    if (p.nodeId) (byNode[p.nodeId] ??= []).push(p);
    if (p.edgeId) (byEdge[p.edgeId] ??= []).push(p);
  }
  return { byNode, byEdge, errors, warnings };
}

export const VALIDATE_DEBOUNCE_MS = 400;

/**
 * Validates the editor graph on the server, debounced, whenever its content
 * revision changes. Returns a stopper.
 */
export function startValidation(): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let ctrl: AbortController | null = null;
  let lastRev = -1;
  const run = async () => {
    const s = useEditor.getState();
    if (s.kind === 'yaml') {
      useValidation.setState({ status: 'idle', rev: s.rev, problems: [], ...indexProblems([]) });
      return;
    }
    ctrl?.abort();
    const c = new AbortController();
    ctrl = c;
    const rev = s.rev;
    try {
      const r = await api.validate(toGraph(s.nodes, s.edges), c.signal);
      if (c.signal.aborted || useEditor.getState().rev !== rev) return;
      const problems = Array.isArray(r.problems) ? r.problems : [];
      useValidation.setState({ status: 'done', rev, problems, ...indexProblems(problems) });
    } catch (e) {
      if (c.signal.aborted || (e as Error).name === 'AbortError') return;
      if (e instanceof ApiError && e.kind === 'http' && e.problems.length > 0) {
        useValidation.setState({ status: 'done', rev, problems: e.problems, ...indexProblems(e.problems) });
        return;
      }
      useValidation.setState({ status: 'unavailable', rev, problems: [], ...indexProblems([]) });
    }
  };
  let lastWorkflow: string | null = useEditor.getState().workflowId;
  const schedule = (rev: number, force = false) => {
    if (rev === lastRev && !force) return;
    lastRev = rev;
    const ed = useEditor.getState();
    if (ed.kind === 'yaml') {
      // Nothing to validate here: clear at once, not after the debounce.
      if (timer) clearTimeout(timer);
      timer = null;
      ctrl?.abort();
      lastWorkflow = ed.workflowId;
      useValidation.setState({ status: 'idle', rev, problems: [], ...indexProblems([]) });
      return;
    }
    if (ed.workflowId !== lastWorkflow) {
      // Another workflow: the old problems name nodes that are not this one's.
      lastWorkflow = ed.workflowId;
      useValidation.setState({ problems: [], ...indexProblems([]) });
    }
    useValidation.setState({ status: 'pending' });
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      void run();
    }, VALIDATE_DEBOUNCE_MS);
  };
  schedule(useEditor.getState().rev);
  const unsub = useEditor.subscribe((s) => schedule(s.rev));
  // When the server comes back, check again what could not be checked.
  const unsubApp = useApp.subscribe((s, prev) => {
    if (s.server === 'ok' && prev.server !== 'ok' && useValidation.getState().status === 'unavailable') {
      schedule(useEditor.getState().rev, true);
    }
  });
  return () => {
    unsub();
    unsubApp();
    if (timer) clearTimeout(timer);
    ctrl?.abort();
  };
}

/** Why Run is disabled, or null when it may run. */
export function runBlocker(v: Pick<ValidationState, 'status' | 'errors'>, serverOk: boolean): string | null {
  if (!serverOk) return 'Server unreachable';
  if (v.status === 'pending' || v.status === 'idle') return 'Checking the workflow…';
  if (v.status === 'unavailable') return 'Validation unavailable';
  if (v.errors > 0) return `Fix ${v.errors} error${v.errors === 1 ? '' : 's'} to run`;
  return null;
}
