import { applyNodeChanges, type NodeChange } from '@xyflow/react';
import { create } from 'zustand';
import { api, ApiError, errorMessage } from '../api/client';
import { openRunStream, type StreamState } from '../api/runStream';
import { isTerminal, type Run, type RunEvent } from '../api/types';
import { toCanvas } from '../graph/canvas';
import type { FlowEdge, FlowNode } from '../graph/types';
import { applyEvents, emptyRunLog, type RunLog } from '../run/reducer';

type RunState = {
  runId: string | null;
  run: Run | null;
  loadError: string | null;
  log: RunLog;
  stream: StreamState | 'idle';
  nodes: FlowNode[];
  edges: FlowEdge[];
  selectedNodeId: string | null;
  filterNodeId: string | null;
  busy: Record<string, boolean>;
  fitRequest: number;
  open: (runId: string) => void;
  close: () => void;
  receive: (events: RunEvent[]) => void;
  refresh: () => Promise<void>;
  decide: (nodeId: string, decision: 'approve' | 'reject', note: string) => Promise<void>;
  cancel: () => Promise<void>;
  onNodesChange: (changes: NodeChange<FlowNode>[]) => void;
  select: (nodeId: string | null) => void;
  setFilter: (nodeId: string | null) => void;
  /** Step-through replay: the canvas and log as of one event of the stored log. */
  replay: Replay | null;
  startReplay: () => Promise<void>;
  seekReplay: (at: number) => void;
  stopReplay: () => void;
};

export type Replay = {
  events: RunEvent[];
  /** How many events are applied (0 = before the first). */
  at: number;
  log: RunLog;
  loading: boolean;
};

/** The log the page shows: the replay's while replaying, else the live one. */
export function viewLog(s: Pick<RunState, 'log' | 'replay'>): RunLog {
  return s.replay?.log ?? s.log;
}

let stream: { close: () => void } | null = null;
let refreshTimer: ReturnType<typeof setTimeout> | null = null;

/** Events after which the run's pending approvals or status may differ. */
const REFRESH_ON = new Set(['wait_input', 'input_received', 'run_status']);

export const useRun = create<RunState>((set, get) => ({
  runId: null,
  run: null,
  loadError: null,
  log: emptyRunLog(),
  stream: 'idle',
  nodes: [],
  edges: [],
  selectedNodeId: null,
  filterNodeId: null,
  busy: {},
  fitRequest: 0,

  open: (runId) => {
    if (get().runId === runId && stream) return;
    get().close();
    set({
      runId,
      run: null,
      loadError: null,
      log: emptyRunLog(),
      stream: 'connecting',
      nodes: [],
      edges: [],
      selectedNodeId: null,
      filterNodeId: null,
      busy: {},
      replay: null,
    });
    void get().refresh();
    stream = openRunStream({
      runId,
      getLastSeq: () => get().log.lastSeq,
      onEvents: (evs) => get().receive(evs),
      onState: (st) => {
        if (get().runId === runId) set({ stream: st });
      },
      // Checked only after a normal close or a full HTTP catch-up, when
      // everything stored has been delivered.
      isDone: () => isTerminal(get().log.runStatus ?? undefined) || isTerminal(get().run?.status),
      fetchEvents: (after) => api.getEvents(runId, after),
    });
  },

  close: () => {
    stream?.close();
    stream = null;
    if (refreshTimer) clearTimeout(refreshTimer);
    refreshTimer = null;
    set({ runId: null, stream: 'idle', replay: null });
  },

  receive: (events) => {
    const s = get();
    const log = applyEvents(s.log, events);
    if (log === s.log) return;
    set({ log });
    if (events.some((e) => REFRESH_ON.has(e.type))) {
      if (refreshTimer) clearTimeout(refreshTimer);
      refreshTimer = setTimeout(() => {
        refreshTimer = null;
        void get().refresh();
      }, 250);
    }
  },

  refresh: async () => {
    const id = get().runId;
    if (!id) return;
    try {
      const run = await api.getRun(id);
      if (get().runId !== id) return;
      const patch: Partial<RunState> = { run, loadError: null };
      let graph = run.graph;
      if (get().nodes.length === 0 && !graph && run.workflowId) {
        // Older runs may lack a graph snapshot; show the workflow's instead.
        graph = await api.getWorkflow(run.workflowId).then(
          (w) => w.graph,
          () => null,
        );
        if (get().runId !== id) return;
      }
      if (get().nodes.length === 0 && graph) {
        const { nodes, edges } = toCanvas(graph);
        patch.nodes = nodes;
        patch.edges = edges;
        patch.fitRequest = get().fitRequest + 1;
      }
      set(patch);
    } catch (e) {
      if (get().runId !== id || get().run) return;
      set({ loadError: errorMessage(e) });
      if (e instanceof ApiError && e.status === 404) {
        // No such run: nothing will ever stream.
        stream?.close();
        stream = null;
        set({ stream: 'idle' });
      }
    }
  },

  decide: async (nodeId, decision, note) => {
    const id = get().runId;
    if (!id) return;
    set({ busy: { ...get().busy, [nodeId]: true } });
    try {
      const run = await api.decide(id, nodeId, decision, note);
      if (get().runId === id && run && typeof run === 'object' && 'status' in run) set({ run });
      else void get().refresh();
    } finally {
      const busy = { ...get().busy };
      delete busy[nodeId];
      set({ busy });
    }
  },

  cancel: async () => {
    const id = get().runId;
    if (!id) return;
    await api.cancelRun(id);
    void get().refresh();
  },

  onNodesChange: (changes) => {
    // Read-only canvas: only selection and measurement changes matter.
    const keep = changes.filter((c) => c.type === 'select' || c.type === 'dimensions');
    if (keep.length === 0) return;
    const nodes = applyNodeChanges(keep, get().nodes);
    const sel = keep.find((c) => c.type === 'select' && c.selected);
    set(sel && sel.type === 'select' ? { nodes, selectedNodeId: sel.id } : { nodes });
  },

  select: (nodeId) => {
    const s = get();
    set({
      selectedNodeId: nodeId,
      nodes: s.nodes.map((n) => ((n.id === nodeId) === !!n.selected ? n : { ...n, selected: n.id === nodeId })),
    });
  },

  setFilter: (filterNodeId) => set({ filterNodeId }),

  replay: null,
  startReplay: async () => {
    const id = get().runId;
    if (!id) return;
    set({ replay: { events: [], at: 0, log: emptyRunLog(), loading: true } });
    try {
      const events = await api.getEvents(id, 0);
      if (get().runId !== id || !get().replay) return;
      set({ replay: { events, at: 0, log: emptyRunLog(), loading: false } });
    } catch (e) {
      set({ replay: null });
      throw e;
    }
  },
  seekReplay: (at) => {
    const r = get().replay;
    if (!r || r.loading) return;
    const k = Math.max(0, Math.min(r.events.length, Math.round(at)));
    if (k === r.at) return;
    // Forward: apply only the new events; back: replay from the start
    // (the reducer is immutable, so the earlier log cannot be unwound).
    const log = k > r.at ? applyEvents(r.log, r.events.slice(r.at, k)) : applyEvents(emptyRunLog(), r.events.slice(0, k));
    set({ replay: { ...r, at: k, log } });
  },
  stopReplay: () => set({ replay: null }),
}));

/** Status to show: the stream's latest run_status, else the fetched run's. */
export function effectiveStatus(s: Pick<RunState, 'log' | 'run'>): string {
  if (isTerminal(s.run?.status) && !isTerminal(s.log.runStatus ?? undefined)) return s.run!.status;
  return s.log.runStatus ?? s.run?.status ?? 'pending';
}
