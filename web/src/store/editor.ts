// The graph editor: the canvas of the open workflow (nodes, edges,
// selection, undo history of drawn graphs) and saving drawn graphs. A YAML
// workflow's canvas lives here too (its projection, positions and
// selection), but its file (text, hash, edits, undo of writes) is the YAML
// file store's (yamlFile.ts), which pushes projections into this one.
import { applyEdgeChanges, applyNodeChanges, type Connection, type EdgeChange, type NodeChange } from '@xyflow/react';
import { create } from 'zustand';
import { api, ApiError, errorMessage } from '../api/client';
import type { Workflow, WorkflowKind } from '../api/types';
import { keepPositions } from '../editor/yaml';
import { toCanvas } from '../graph/canvas';
import { copySelection, pasteGraph, pasteOffset } from '../graph/clipboard';
import { applyConditionEdit, type ConditionEdit } from '../graph/conditions';
import { connectionProblem } from '../graph/connect';
import { defaultData } from '../graph/factory';
import { starterGraph } from '../graph/templates';
import { checkpoint, emptyHistory, redo as redoH, undo as undoH, type History, type Snapshot } from '../graph/history';
import { nextId } from '../graph/ids';
import { elkLayout } from '../graph/elkLayout';
import { edgeViewType, toGraph } from '../graph/serialize';
import {
  SUBAGENT_HANDLE,
  type EditableNodeType,
  type FlowEdge,
  type FlowNode,
  type Graph,
  type NodeData,
} from '../graph/types';

type GraphSnap = { nodes: FlowNode[]; edges: FlowEdge[] };

export type Conflict = { message: string };

export type NewWorkflowOptions = { graph?: Graph; name?: string; description?: string; unsaved?: boolean };

export type EditorState = {
  workflowId: string | null;
  kind: WorkflowKind;
  name: string;
  description: string;
  /** Version loaded from (or last saved to) the server. */
  version: number | null;
  nodes: FlowNode[];
  edges: FlowEdge[];
  /** Bumped on every content change; equals savedRev when nothing is unsaved. */
  rev: number;
  savedRev: number;
  /** Source of fresh revisions (see newRev). */
  revSeq: number;
  metaDirty: boolean;
  history: History<GraphSnap>;
  loading: boolean;
  loadError: string | null;
  saving: boolean;
  conflict: Conflict | null;
  /** Set when the graph was replaced wholesale and the view should refit. */
  fitRequest: number;
  /** Nodes copied with Ctrl+C (this tab only). */
  clipboard: Graph | null;
  /** A node drag in progress: the whole drag is one undo step. */
  dragging: boolean;
  /** YAML workflows: bumped when nodes were moved (a drag's end, Auto-layout); their positions are stored aside. */
  positionsRev: number;

  /**
   * Opens a new unsaved workflow: the starter graph, or `o.graph` (a
   * template). A template counts as unsaved, so leaving it asks first.
   */
  newWorkflow: (o?: NewWorkflowOptions) => void;
  /** Fetches a workflow and shows it; resolves with it (null when it failed or the user moved on). */
  loadWorkflow: (id: string) => Promise<Workflow | null>;
  /** Shows a workflow the server answered with (a load, a reload). */
  showWorkflow: (w: Workflow, keepFrom?: FlowNode[]) => void;
  setMeta: (patch: { name?: string; description?: string }) => void;
  onNodesChange: (changes: NodeChange<FlowNode>[]) => void;
  onEdgesChange: (changes: EdgeChange<FlowEdge>[]) => void;
  connect: (c: Connection) => void;
  addNode: (type: EditableNodeType, position: { x: number; y: number }) => string;
  updateNodeData: (id: string, patch: NodeData, field: string) => void;
  editConditions: (id: string, edit: ConditionEdit) => void;
  deleteSelected: () => void;
  selectAll: () => void;
  selectOnly: (nodeId: string | null, edgeId?: string | null) => void;
  copy: () => boolean;
  paste: () => boolean;
  undo: () => void;
  redo: () => void;
  autoLayout: () => Promise<void>;
  replaceGraph: (g: Graph) => void;
  save: (opts?: { overwrite?: boolean }) => Promise<boolean>;
  reloadFromServer: () => Promise<void>;
  dismissConflict: () => void;
  /** YAML: a new canvas projection of the file's text; nodes keep their positions and selection. */
  applyProjection: (graph: unknown, stored?: Record<string, { x: number; y: number }>) => void;
  /** YAML: puts stored positions on the canvas. */
  placeNodes: (positions: Record<string, { x: number; y: number }>, refit?: boolean) => void;
  requestFit: () => void;
};

function starter(g: Graph = starterGraph()): GraphSnap {
  return toCanvas(structuredClone(g));
}

export const isDirty = (s: Pick<EditorState, 'rev' | 'savedRev' | 'metaDirty'>) => s.rev !== s.savedRev || s.metaDirty;

/** The data part of a fresh store: a new workflow with the starter graph. */
function initialData() {
  return {
    workflowId: null,
    kind: 'graph' as WorkflowKind,
    name: 'Untitled workflow',
    description: '',
    version: null,
    ...starter(),
    rev: 1,
    savedRev: 1,
    revSeq: 1,
    metaDirty: false,
    history: emptyHistory<GraphSnap>(),
    loading: false,
    loadError: null,
    saving: false,
    conflict: null,
    fitRequest: 0,
    clipboard: null,
    dragging: false,
    positionsRev: 0,
  } satisfies Partial<EditorState>;
}

/** A graph editor store (the app has one, useEditor; tests may make their own). */
export function createEditorStore() {
  return create<EditorState>((set, get) => {
    /** A revision never used before in this store. */
    const newRev = () => {
      const r = get().revSeq + 1;
      set({ revSeq: r });
      return r;
    };
    /** Takes an undo checkpoint of the current graph. */
    const mark = (key: string | null) => {
      const s = get();
      const present: Snapshot<GraphSnap> = { value: { nodes: s.nodes, edges: s.edges }, rev: s.rev };
      set({ history: checkpoint(s.history, present, key, Date.now()) });
    };
    /** YAML canvases change through their file (the YAML file store), never here. */
    const readOnly = () => get().kind === 'yaml';
    const fromWorkflow = (w: Workflow): Partial<EditorState> => {
      const { nodes, edges } = toCanvas(w.graph ?? { nodes: [], edges: [] });
      const rev = newRev();
      return {
        workflowId: w.id,
        kind: w.kind === 'yaml' ? 'yaml' : 'graph',
        name: w.name ?? '',
        description: w.description ?? '',
        version: typeof w.version === 'number' ? w.version : null,
        nodes,
        edges,
        rev,
        savedRev: rev,
        metaDirty: false,
        history: emptyHistory(),
        loading: false,
        loadError: null,
        conflict: null,
        dragging: false,
      };
    };

    return {
      ...initialData(),

      newWorkflow: (o = {}) => {
        const rev = newRev();
        set({
          workflowId: null,
          kind: 'graph',
          name: o.name ?? 'Untitled workflow',
          description: o.description ?? '',
          version: null,
          ...starter(o.graph),
          rev,
          savedRev: rev,
          metaDirty: !!o.unsaved,
          history: emptyHistory(),
          loading: false,
          loadError: null,
          conflict: null,
          dragging: false,
          fitRequest: get().fitRequest + 1,
        });
      },

      loadWorkflow: async (id) => {
        set({ loading: true, loadError: null, workflowId: id });
        try {
          const w = await api.getWorkflow(id);
          if (get().workflowId !== id) return null; // user moved on
          get().showWorkflow(w);
          return w;
        } catch (e) {
          if (get().workflowId !== id) return null;
          set({ loading: false, loadError: errorMessage(e), nodes: [], edges: [], history: emptyHistory() });
          return null;
        }
      },

      showWorkflow: (w, keepFrom) => {
        const next = fromWorkflow(w);
        if (keepFrom) next.nodes = keepPositions(next.nodes ?? [], keepFrom);
        set({ ...next, fitRequest: get().fitRequest + 1 });
      },

      setMeta: (patch) => set({ ...patch, metaDirty: true }),

      onNodesChange: (input) => {
        const s = get();
        let changes = input;
        const structural = (c: NodeChange<FlowNode>) => c.type === 'remove' || c.type === 'add' || c.type === 'replace';
        if (readOnly()) changes = changes.filter((c) => !structural(c));
        let content = false;
        const dragMove = changes.some((c) => c.type === 'position' && c.dragging);
        const moveEnd = changes.some((c) => c.type === 'position' && !c.dragging);
        if (dragMove && !s.dragging) {
          mark(null);
          set({ dragging: true });
        }
        if (moveEnd && s.kind === 'yaml') {
          // Positions of a YAML workflow are not part of its text: stored aside.
          set({ nodes: applyNodeChanges(changes, get().nodes), dragging: false, positionsRev: s.positionsRev + 1 });
          return;
        }
        if (moveEnd) {
          // Drag end, or a keyboard (arrow key) move that had no drag.
          if (!get().dragging) mark('keyboard-move');
          set({ dragging: false });
          content = true;
        }
        if (changes.some(structural)) {
          mark(null);
          content = true;
        }
        if (changes.length === 0) return;
        const nodes = applyNodeChanges(changes, get().nodes);
        set(content ? { nodes, rev: newRev() } : { nodes });
      },

      onEdgesChange: (changes) => {
        const s = get();
        const content = changes.some((c) => c.type !== 'select');
        if (content) {
          if (readOnly()) return;
          mark(null);
        }
        const edges = applyEdgeChanges(changes, s.edges);
        set(content ? { edges, rev: newRev() } : { edges });
      },

      connect: (c) => {
        const s = get();
        if (readOnly()) return;
        const byId = new Map(s.nodes.map((n) => [n.id, n]));
        if (connectionProblem(c, byId, s.edges) !== null) return;
        mark(null);
        const edge: FlowEdge = {
          id: nextId('e', s.edges.map((e) => e.id)),
          source: c.source,
          target: c.target,
          sourceHandle: c.sourceHandle ?? null,
          targetHandle: c.targetHandle ?? 'input',
          type: edgeViewType(c),
        };
        set({ edges: [...s.edges, edge], rev: newRev() });
      },

      addNode: (type, position) => {
        const s = get();
        if (readOnly()) return '';
        mark(null);
        const id = nextId('n', s.nodes.map((n) => n.id));
        const ordinal = s.nodes.filter((n) => n.type === type).length + 1;
        const node: FlowNode = {
          id,
          type,
          position: { x: Math.round(position.x), y: Math.round(position.y) },
          data: defaultData(type, ordinal),
          selected: true,
        };
        const nodes = s.nodes.map((n) => (n.selected ? { ...n, selected: false } : n));
        nodes.push(node);
        const edges = s.edges.map((e) => (e.selected ? { ...e, selected: false } : e));
        set({ nodes, edges, rev: newRev() });
        return id;
      },

      updateNodeData: (id, patch, field) => {
        const s = get();
        if (readOnly()) return;
        const node = s.nodes.find((n) => n.id === id);
        if (!node) return;
        mark(`data:${id}:${field}`);
        const data = { ...node.data, ...patch };
        let edges = s.edges;
        const tools = data.tools as { subagents?: boolean } | undefined;
        if (node.type === 'agent' && tools?.subagents !== true) {
          // The subagent handle goes away with the toggle; so do its edges.
          edges = edges.filter((e) => !(e.source === id && e.sourceHandle === SUBAGENT_HANDLE));
        }
        set({ nodes: s.nodes.map((n) => (n.id === id ? { ...n, data } : n)), edges, rev: newRev() });
      },

      editConditions: (id, edit) => {
        const s = get();
        if (readOnly()) return;
        const node = s.nodes.find((n) => n.id === id);
        if (!node || node.type !== 'if') return;
        mark(edit.kind === 'update' ? `cond:${id}:${edit.index}:${Object.keys(edit.patch).join(',')}` : null);
        const r = applyConditionEdit(id, node.data, s.edges, edit);
        set({ nodes: s.nodes.map((n) => (n.id === id ? { ...n, data: r.data } : n)), edges: r.edges, rev: newRev() });
      },

      deleteSelected: () => {
        const s = get();
        if (readOnly()) return;
        const gone = new Set(s.nodes.filter((n) => n.selected).map((n) => n.id));
        const edges = s.edges.filter((e) => !e.selected && !gone.has(e.source) && !gone.has(e.target));
        if (gone.size === 0 && edges.length === s.edges.length) return;
        mark(null);
        set({ nodes: s.nodes.filter((n) => !gone.has(n.id)), edges, rev: newRev() });
      },

      selectAll: () => {
        const s = get();
        set({
          nodes: s.nodes.map((n) => (n.selected ? n : { ...n, selected: true })),
          edges: s.edges.map((e) => (e.selected ? e : { ...e, selected: true })),
        });
      },

      selectOnly: (nodeId, edgeId = null) => {
        const s = get();
        set({
          nodes: s.nodes.map((n) => ((n.id === nodeId) === !!n.selected ? n : { ...n, selected: n.id === nodeId })),
          edges: s.edges.map((e) => ((e.id === edgeId) === !!e.selected ? e : { ...e, selected: e.id === edgeId })),
        });
      },

      copy: () => {
        const s = get();
        const c = copySelection(s.nodes, s.edges);
        if (!c) return false;
        set({ clipboard: c });
        return true;
      },

      paste: () => {
        const s = get();
        const clip = s.clipboard;
        if (!clip || readOnly()) return false;
        const r = pasteGraph(
          clip,
          s.nodes.map((n) => n.id),
          s.edges.map((e) => e.id),
          pasteOffset(clip, s.nodes),
          s.nodes.map((n) => String(n.data.agentName ?? '')).filter(Boolean),
        );
        mark(null);
        set({
          nodes: [...s.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), ...r.nodes],
          edges: [...s.edges.map((e) => (e.selected ? { ...e, selected: false } : e)), ...r.edges],
          rev: newRev(),
        });
        return true;
      },

      undo: () => {
        const s = get();
        const r = undoH(s.history, { value: { nodes: s.nodes, edges: s.edges }, rev: s.rev });
        if (!r) return;
        set({ history: r.history, nodes: r.value.value.nodes, edges: r.value.value.edges, rev: r.value.rev });
      },

      redo: () => {
        const s = get();
        const r = redoH(s.history, { value: { nodes: s.nodes, edges: s.edges }, rev: s.rev });
        if (!r) return;
        set({ history: r.history, nodes: r.value.value.nodes, edges: r.value.value.edges, rev: r.value.rev });
      },

      autoLayout: async () => {
        const s = get();
        if (s.nodes.length === 0) return;
        const rev = s.rev;
        const pos = await elkLayout(
          s.nodes.map((n) => ({ id: n.id, width: n.measured?.width, height: n.measured?.height, y: n.position.y })),
          s.edges,
        );
        // The graph changed while ELK worked: its positions are for another graph.
        if (get().rev !== rev) return;
        const cur = get();
        if (cur.kind === 'yaml') {
          // Positions of a YAML workflow are not part of its text: stored aside.
          set({
            nodes: cur.nodes.map((n) => ({ ...n, position: pos.get(n.id) ?? n.position })),
            fitRequest: cur.fitRequest + 1,
            positionsRev: cur.positionsRev + 1,
          });
          return;
        }
        mark(null);
        set({
          nodes: cur.nodes.map((n) => {
            const p = pos.get(n.id);
            return p ? { ...n, position: p } : n;
          }),
          rev: newRev(),
          fitRequest: cur.fitRequest + 1,
        });
      },

      replaceGraph: (g) => {
        const s = get();
        mark(null);
        const { nodes, edges } = toCanvas(g);
        set({ nodes, edges, rev: newRev(), fitRequest: s.fitRequest + 1 });
      },

      save: async (opts = {}) => {
        const s = get();
        if (s.saving || readOnly()) return false;
        set({ saving: true });
        const graph = toGraph(s.nodes, s.edges);
        const revAtSave = s.rev;
        const meta = { name: s.name, description: s.description };
        try {
          let w: Workflow;
          if (s.workflowId === null) {
            w = await api.createWorkflow({ ...meta, graph });
          } else {
            let version = s.version ?? 0;
            if (opts.overwrite) {
              // The user chose to replace the other tab's change.
              const latest = await api.getWorkflow(s.workflowId);
              version = latest.version;
            }
            w = await api.updateWorkflow(s.workflowId, { ...meta, graph, version });
          }
          set({
            workflowId: w.id,
            version: typeof w.version === 'number' ? w.version : s.version,
            savedRev: revAtSave,
            // Still dirty if the name or description changed while saving.
            metaDirty: get().name !== meta.name || get().description !== meta.description,
            saving: false,
            conflict: null,
          });
          return true;
        } catch (e) {
          if (e instanceof ApiError && e.conflict) {
            set({
              saving: false,
              conflict: {
                message:
                  'This workflow was changed somewhere else (another tab or person) since you opened it. Your changes are not saved.',
              },
            });
          } else {
            set({ saving: false });
          }
          throw e;
        }
      },

      reloadFromServer: async () => {
        const id = get().workflowId;
        if (!id) return;
        const w = await api.getWorkflow(id);
        get().showWorkflow(w, get().nodes);
      },

      dismissConflict: () => set({ conflict: null }),

      applyProjection: (graph, stored = {}) => {
        const s = get();
        if (s.kind !== 'yaml') return;
        const { nodes, edges } = toCanvas(graph ?? { nodes: [], edges: [] });
        const selected = new Set(s.nodes.filter((n) => n.selected).map((n) => n.id));
        set({
          nodes: keepPositions(nodes, s.nodes, stored).map((n) => (selected.has(n.id) ? { ...n, selected: true } : n)),
          edges,
        });
      },

      placeNodes: (positions, refit = false) => {
        const s = get();
        const nodes = s.nodes.map((n) => {
          const p = positions[n.id];
          return p ? { ...n, position: { x: p.x, y: p.y } } : n;
        });
        set(refit ? { nodes, fitRequest: s.fitRequest + 1 } : { nodes });
      },

      requestFit: () => set({ fitRequest: get().fitRequest + 1 }),
    };
  });
}

export type EditorStore = ReturnType<typeof createEditorStore>;

export const useEditor = createEditorStore();

/** For tests: back to a fresh store's state (a new workflow with the starter graph). */
export function resetEditorStore(store: EditorStore = useEditor): void {
  store.setState(initialData());
}
