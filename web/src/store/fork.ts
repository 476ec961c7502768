// The "Run from here" dialog's state: which node to run from, the upstream
// outputs the new run will reuse, the one the person edits (pinned data),
// and the request that starts the fork.
import { create } from 'zustand';
import { api, errorMessage } from '../api/client';
import type { Run } from '../api/types';
import { forkBlocker, forkRequest, reusedNodes, type ReusedNode } from '../run/fork';
import { nodeName } from '../graph/checks';

type N = { id: string; type?: string; data: Record<string, unknown> };
type E = { source: string; target: string; sourceHandle?: string | null };

export type ForkState = {
  /** The run to fork and the node to run from; null while the dialog is closed. */
  runId: string | null;
  from: string | null;
  fromName: string;
  reused: ReusedNode[];
  /** The reused node whose output is being edited, or null (every output as stored). */
  editId: string | null;
  text: string;
  busy: boolean;
  error: string | null;
  /** Opens the dialog for node `from` of `run` (drawn with nodes and edges); false, and nothing opens, when the run cannot be forked. */
  open: (run: Run, nodes: readonly N[], edges: readonly E[], from: string) => boolean;
  close: () => void;
  /** Picks the output to edit (prefilled with the stored one), or none. */
  edit: (id: string | null) => void;
  setText: (text: string) => void;
  /** Starts the fork; resolves with the new run's id, or null when it failed (error says why). */
  submit: () => Promise<string | null>;
};

const closed = { runId: null, from: null, fromName: '', reused: [], editId: null, text: '', busy: false, error: null };

export const useFork = create<ForkState>((set, get) => ({
  ...closed,

  open: (run, nodes, edges, from) => {
    if (forkBlocker(run.status)) return false;
    const reused = reusedNodes(run, nodes, edges, from);
    set({ ...closed, runId: run.runId, from, fromName: nodeName(nodes.find((n) => n.id === from), from), reused });
    return true;
  },

  close: () => {
    if (get().busy) return;
    set(closed);
  },

  edit: (id) => {
    const r = id === null ? undefined : get().reused.find((x) => x.id === id);
    set({ editId: r ? r.id : null, text: r ? r.output : '', error: null });
  },

  setText: (text) => set({ text }),

  submit: async () => {
    const s = get();
    if (!s.runId || !s.from || s.busy) return null;
    set({ busy: true, error: null });
    try {
      const req = forkRequest(s.from, s.reused, s.editId ? { id: s.editId, text: s.text } : null);
      const next = await api.forkRun(s.runId, req);
      set(closed);
      return next.runId;
    } catch (e) {
      set({ busy: false, error: errorMessage(e) });
      return null;
    }
  },
}));
