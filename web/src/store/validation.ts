import { useMemo } from 'react';
import { create } from 'zustand';
import { api, ApiError } from '../api/client';
import type { Problem } from '../api/types';
import { toGraph } from '../graph/serialize';
import { endlessLoops } from '../graph/checks';
import { useApp } from './app';
import { useEditor } from './editor';
import { isYamlDirty, useYamlFile } from './yamlFile';

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
  /** YAML: the text the problems were found in (they carry its lines). */
  yamlSource?: string;
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
 * The server's problems and the UI's own checks (loops nothing can leave),
 * without a check the server already reported for the same node.
 */
export function withClientChecks(
  server: Problem[],
  nodes: Parameters<typeof endlessLoops>[0],
  edges: Parameters<typeof endlessLoops>[1],
): Problem[] {
  const seen = new Set(server.map((p) => `${p.code}\u0000${p.nodeId ?? ''}`));
  const extra = endlessLoops(nodes, edges).filter((p) => !seen.has(`${p.code}\u0000${p.nodeId ?? ''}`));
  return extra.length ? [...server, ...extra] : server;
}

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
      const problems = withClientChecks(Array.isArray(r.problems) ? r.problems : [], s.nodes, s.edges);
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
      // The YAML text editor validates its text itself (setYamlProblems);
      // here only a change of workflow clears the old problems.
      if (timer) clearTimeout(timer);
      timer = null;
      ctrl?.abort();
      if (ed.workflowId !== lastWorkflow || useValidation.getState().status !== 'done') {
        lastWorkflow = ed.workflowId;
        useValidation.setState({ status: 'idle', rev, problems: [], ...indexProblems([]) });
      }
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

/** Problems of a YAML workflow's text (live validation or a save's answer). */
export function setYamlProblems(problems: Problem[], source: string): void {
  useValidation.setState({ status: 'done', rev: useEditor.getState().rev, problems, yamlSource: source, ...indexProblems(problems) });
}

/** Idle time after the last key before YAML text is validated. */
export const YAML_VALIDATE_DEBOUNCE_MS = 300;

/**
 * Validates the open YAML workflow's text on the server as it changes
 * (debounced): its problems go to the Problems panel and inline into the
 * text, its graph becomes the canvas. Returns a stopper.
 */
export function startYamlValidation(): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let ctrl: AbortController | null = null;
  let last: string | null = null;
  const run = async (source: string) => {
    ctrl?.abort();
    const c = new AbortController();
    ctrl = c;
    const y = useYamlFile.getState();
    try {
      const r = await api.validateYaml(source, y.path || undefined, c.signal);
      const now = useYamlFile.getState();
      if (c.signal.aborted || useEditor.getState().kind !== 'yaml' || now.source !== source) return;
      // Text as loaded or saved: the canvas already has the server's own
      // projection of the file, which (unlike this one) expands include:
      // blocks into their grouped nodes.
      if (isYamlDirty(now)) useEditor.getState().applyProjection(r.graph);
      const problems = Array.isArray(r.problems) ? r.problems : [];
      setYamlProblems(problems, source);
      now.noteChecked(source, problems.filter((p) => p.severity === 'error').length);
    } catch {
      // Unreachable server: the app shows it; the next change tries again.
    }
  };
  const check = (force = false) => {
    const y = useYamlFile.getState();
    if (useEditor.getState().kind !== 'yaml' || y.workflowId === null) {
      last = null;
      return;
    }
    const key = `${y.workflowId}\n${y.source}`;
    if (key === last && !force) return;
    last = key;
    if (timer) clearTimeout(timer);
    const source = y.source;
    timer = setTimeout(() => {
      timer = null;
      void run(source);
    }, YAML_VALIDATE_DEBOUNCE_MS);
  };
  check();
  const unsub = useYamlFile.subscribe(() => check());
  const unsubEditor = useEditor.subscribe(() => check());
  return () => {
    unsub();
    unsubEditor();
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

/**
 * Why a YAML workflow may not run, or null: the live check of the text as
 * typed comes first (its errors would make the server refuse the run, after
 * Save & Run had written them); then what the server says of the file.
 */
export function yamlRunBlocker(
  v: { errors: number; yamlSource?: string },
  y: { source: string; saved: string; runBlocker: string | null },
  serverOk: boolean,
): string | null {
  if (!serverOk) return 'Server unreachable';
  if (v.yamlSource !== y.source) return 'Checking the text…';
  if (v.errors > 0) return `Fix ${v.errors} error${v.errors === 1 ? '' : 's'} to run`;
  // Unsaved text without errors: Save & Run writes it, and the server checks it again.
  if (y.source !== y.saved) return null;
  return y.runBlocker;
}

/**
 * What keeps a workflow from running when no listed problem says so (a
 * YAML provider without its key: the server refuses the run, yet the
 * file has no error): shown in the Problems list, on the node it names.
 */
export function cannotRunProblem(blocker: string): Problem {
  const node = /node "([^"]+)"/.exec(blocker)?.[1];
  return { code: 'cannot_run', severity: 'error', message: `Cannot run here: ${blocker}`, ...(node ? { nodeId: node } : {}) };
}

/** The cannot-run problem of the open YAML workflow, when its (saved) file has no errors but the server refuses to run it. */
export function useCannotRun(): Problem | null {
  const blocker = useYamlFile((s) => (s.workflowId && s.source === s.saved ? s.runBlocker : null));
  const source = useYamlFile((s) => s.source);
  const yaml = useEditor((s) => s.kind === 'yaml');
  // Only once the text was checked: its own errors come first.
  const checked = useValidation((s) => s.yamlSource === source && s.status === 'done');
  const errors = useValidation((s) => s.errors);
  return useMemo(() => (yaml && blocker && checked && errors === 0 ? cannotRunProblem(blocker) : null), [yaml, blocker, checked, errors]);
}
