import { applyEdgeChanges, applyNodeChanges, type Connection, type EdgeChange, type NodeChange } from '@xyflow/react';
import { create } from 'zustand';
import { api, ApiError, errorMessage } from '../api/client';
import { useApp } from './app';
import type { Workflow, WorkflowKind, YamlConflictBody, YamlEdit, YamlNodeKind } from '../api/types';
import { deletionEdits, keepPositions, newYamlNodeId, yamlEdits } from '../editor/yaml';
import { toCanvas } from '../graph/canvas';
import { copySelection, pasteGraph, pasteOffset } from '../graph/clipboard';
import { applyConditionEdit, type ConditionEdit } from '../graph/conditions';
import { connectionProblem } from '../graph/connect';
import { defaultData } from '../graph/factory';
import { starterGraph } from '../graph/templates';
import { checkpoint, emptyHistory, redo as redoH, undo as undoH, type History, type Snapshot } from '../graph/history';
import { nextId } from '../graph/ids';
import { elkLayout } from '../graph/elkLayout';
import { isIncluded } from '../graph/groups';
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

/** How a YAML workflow is shown: its canvas, its text, or both side by side. */
export type YamlView = 'canvas' | 'text' | 'split';

/** Milliseconds after the last node drag before YAML node positions are stored. */
export const POSITIONS_DEBOUNCE_MS = 400;

export type NewWorkflowOptions = { graph?: Graph; name?: string; description?: string; unsaved?: boolean };

export type EditorState = {
  workflowId: string | null;
  kind: WorkflowKind;
  /** Why a read-only (YAML) workflow cannot run here, from the server; null if it can. */
  runBlocker: string | null;
  name: string;
  description: string;
  /** Version loaded from (or last saved to) the server. */
  version: number | null;
  nodes: FlowNode[];
  edges: FlowEdge[];
  /** Bumped on every content change; equals savedRev when nothing is unsaved. */
  rev: number;
  savedRev: number;
  metaDirty: boolean;
  history: History<GraphSnap>;
  loading: boolean;
  loadError: string | null;
  saving: boolean;
  conflict: Conflict | null;
  /** Set when the graph was replaced wholesale and the view should refit. */
  fitRequest: number;
  /** YAML workflows: the server saves the file (else it is read-only here). */
  editable: boolean;
  /** YAML workflows: the text being edited, and the hash of the file's text it started from. */
  source: string;
  sourceHash: string | null;
  yamlPath: string;
  yamlView: YamlView;
  /** YAML workflows: a save refused because the file changed on disk. */
  yamlConflict: YamlConflictBody | null;

  /**
   * Opens a new unsaved workflow: the starter graph, or `o.graph` (a
   * template). A template counts as unsaved, so leaving it asks first.
   */
  newWorkflow: (o?: NewWorkflowOptions) => void;
  loadWorkflow: (id: string) => Promise<void>;
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
  /** YAML: the text as typed (marks the workflow unsaved). */
  setSource: (text: string) => void;
  /** YAML: a new canvas projection of the text (from live validation). */
  applyProjection: (graph: unknown) => void;
  /** YAML: applies structured edits to the file on the server (saving typed text first). */
  applyYamlEdits: (edits: YamlEdit[], place?: { id: string; position: { x: number; y: number } }) => Promise<boolean>;
  addYamlNode: (kind: YamlNodeKind, position: { x: number; y: number }) => Promise<string | null>;
  setYamlView: (v: YamlView) => void;
  /** YAML conflict: load the file as it is on disk, or save mine over it. */
  resolveYamlConflict: (choice: 'disk' | 'mine') => Promise<boolean>;
};

let revCounter = 1;
const newRev = () => ++revCounter;
let clipboard: Graph | null = null;
let positionsTimer: ReturnType<typeof setTimeout> | null = null;
/** A drag is one undo step: the checkpoint is taken when it starts. */
let dragging = false;

function starter(g: Graph = starterGraph()): GraphSnap {
  return toCanvas(structuredClone(g));
}

export const isDirty = (s: Pick<EditorState, 'rev' | 'savedRev' | 'metaDirty'>) => s.rev !== s.savedRev || s.metaDirty;

function fromWorkflow(w: Workflow): Partial<EditorState> {
  const { nodes, edges } = toCanvas(w.graph ?? { nodes: [], edges: [] });
  const rev = newRev();
  return {
    editable: w.kind === 'yaml' && w.editable === true,
    source: w.source ?? '',
    sourceHash: w.sourceHash ?? null,
    yamlPath: w.path ?? '',
    yamlConflict: null,
    workflowId: w.id,
    kind: w.kind === 'yaml' ? 'yaml' : 'graph',
    runBlocker: w.runBlocker || null,
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
  };
}

export const useEditor = create<EditorState>((set, get) => {
  /** Takes an undo checkpoint of the current graph. */
  const mark = (key: string | null) => {
    const s = get();
    const present: Snapshot<GraphSnap> = { value: { nodes: s.nodes, edges: s.edges }, rev: s.rev };
    set({ history: checkpoint(s.history, present, key, Date.now()) });
  };
  const readOnly = () => get().kind === 'yaml';
  const yamlEditable = () => get().kind === 'yaml' && get().editable && get().workflowId !== null;
  const schedulePositions = () => {
    if (positionsTimer) clearTimeout(positionsTimer);
    positionsTimer = setTimeout(() => {
      positionsTimer = null;
      const s = get();
      if (!yamlEditable()) return;
      const positions = Object.fromEntries(s.nodes.map((n) => [n.id, { x: Math.round(n.position.x), y: Math.round(n.position.y) }]));
      api.putYamlPositions(s.workflowId!, positions).catch(() => {
        /* positions are a convenience: the next drag tries again */
      });
    }, POSITIONS_DEBOUNCE_MS);
  };
  /** Takes a YAML workflow the server answered a save with; keeps node positions and typed text. */
  const takeYamlAnswer = (w: Workflow, revAtSave: number) => {
    const s = get();
    const { nodes, edges } = toCanvas(w.graph ?? { nodes: [], edges: [] });
    const typedSince = s.rev !== revAtSave;
    const rev = typedSince ? s.rev : newRev();
    // The step being edited stays selected (its inspector stays open).
    const selected = new Set(s.nodes.filter((n) => n.selected).map((n) => n.id));
    set({
      source: typedSince ? s.source : (w.source ?? s.source),
      sourceHash: w.sourceHash ?? s.sourceHash,
      editable: w.editable === true,
      runBlocker: w.runBlocker || null,
      name: w.name ?? s.name,
      description: w.description ?? s.description,
      nodes: typedSince ? s.nodes : keepPositions(nodes, s.nodes).map((n) => (selected.has(n.id) ? { ...n, selected: true } : n)),
      edges: typedSince ? s.edges : edges,
      rev,
      savedRev: typedSince ? revAtSave : rev,
      yamlConflict: null,
      conflict: null,
    });
  };
  const onYamlError = (e: unknown) => {
    if (e instanceof ApiError && e.conflict && e.body && typeof e.body === 'object' && 'disk' in e.body) {
      set({ saving: false, yamlConflict: e.body as YamlConflictBody });
    } else {
      set({ saving: false });
    }
    throw e;
  };

  return {
    workflowId: null,
    kind: 'graph',
    runBlocker: null,
    name: 'Untitled workflow',
    description: '',
    version: null,
    ...starter(),
    rev: 1,
    savedRev: 1,
    metaDirty: false,
    history: emptyHistory(),
    loading: false,
    loadError: null,
    saving: false,
    conflict: null,
    fitRequest: 0,
    editable: false,
    source: '',
    sourceHash: null,
    yamlPath: '',
    yamlView: 'canvas',
    yamlConflict: null,

    newWorkflow: (o = {}) => {
      const rev = newRev();
      set({
        workflowId: null,
        kind: 'graph',
        runBlocker: null,
        name: o.name ?? 'Untitled workflow',
        description: o.description ?? '',
        version: null,
        editable: false,
        source: '',
        sourceHash: null,
        yamlPath: '',
        yamlConflict: null,
        ...starter(o.graph),
        rev,
        savedRev: rev,
        metaDirty: !!o.unsaved,
        history: emptyHistory(),
        loading: false,
        loadError: null,
        conflict: null,
        fitRequest: get().fitRequest + 1,
      });
    },

    loadWorkflow: async (id) => {
      set({ loading: true, loadError: null, workflowId: id });
      try {
        const w = await api.getWorkflow(id);
        if (get().workflowId !== id) return; // user moved on
        set({ ...fromWorkflow(w), fitRequest: get().fitRequest + 1 });
        if (w.kind === 'yaml') void overlayPositions(id);
      } catch (e) {
        if (get().workflowId !== id) return;
        set({ loading: false, loadError: errorMessage(e), nodes: [], edges: [], history: emptyHistory() });
      }
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
      if (dragMove && !dragging) {
        dragging = true;
        mark(null);
      }
      if (moveEnd && s.kind === 'yaml') {
        dragging = false;
        if (yamlEditable()) schedulePositions();
        set({ nodes: applyNodeChanges(changes, s.nodes) });
        return;
      }
      if (moveEnd) {
        // Drag end, or a keyboard (arrow key) move that had no drag.
        if (!dragging) mark('keyboard-move');
        dragging = false;
        content = true;
      }
      if (changes.some(structural)) {
        mark(null);
        content = true;
      }
      if (changes.length === 0) return;
      const nodes = applyNodeChanges(changes, s.nodes);
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
      if (yamlEditable()) {
        if (c.source && c.target && c.source !== c.target && !s.edges.some((e) => e.source === c.source && e.target === c.target))
          void get().applyYamlEdits([yamlEdits.connect(c.source, c.target)]).catch(reportYamlError('connect the steps'));
        return;
      }
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
      if (yamlEditable()) {
        // Nodes an include inlined, and their edges, are not in the file.
        const included = new Set(s.nodes.filter(isIncluded).map((n) => n.id));
        const edits = deletionEdits(
          s.nodes.filter((n) => !included.has(n.id)),
          s.edges.filter((e) => !included.has(e.source) && !included.has(e.target)),
        );
        if (edits.length) void get().applyYamlEdits(edits).catch(reportYamlError('delete'));
        return;
      }
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
      clipboard = c;
      return true;
    },

    paste: () => {
      const s = get();
      if (!clipboard || readOnly()) return false;
      const r = pasteGraph(
        clipboard,
        s.nodes.map((n) => n.id),
        s.edges.map((e) => e.id),
        pasteOffset(clipboard, s.nodes),
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
        set({ nodes: cur.nodes.map((n) => ({ ...n, position: pos.get(n.id) ?? n.position })), fitRequest: cur.fitRequest + 1 });
        if (yamlEditable()) schedulePositions();
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
      if (yamlEditable()) {
        if (s.saving) return false;
        set({ saving: true });
        const revAtSave = s.rev;
        try {
          const w = await api.saveYaml(s.workflowId!, { source: s.source, baseHash: s.sourceHash ?? '' });
          set({ saving: false });
          takeYamlAnswer(w, revAtSave);
          return true;
        } catch (e) {
          return onYamlError(e);
        }
      }
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
      const prev = get().nodes;
      const view = get().yamlView;
      const next = fromWorkflow(w);
      set({ ...next, nodes: keepPositions(next.nodes ?? [], prev), yamlView: view, fitRequest: get().fitRequest + 1 });
    },

    dismissConflict: () => set({ conflict: null }),

    setSource: (text) => {
      if (get().source === text) return;
      set({ source: text, rev: newRev() });
    },

    applyProjection: (graph) => {
      const s = get();
      if (s.kind !== 'yaml') return;
      const { nodes, edges } = toCanvas(graph ?? { nodes: [], edges: [] });
      const selected = new Set(s.nodes.filter((n) => n.selected).map((n) => n.id));
      set({
        nodes: keepPositions(nodes, s.nodes).map((n) => (selected.has(n.id) ? { ...n, selected: true } : n)),
        edges,
      });
    },

    applyYamlEdits: async (edits, place) => {
      if (!yamlEditable()) return false;
      if (isDirty(get())) {
        // Typed text first: the edits apply to the file as saved.
        const ok = await get().save();
        if (!ok) return false;
      }
      const s = get();
      if (s.saving) return false;
      set({ saving: true });
      const revAtSave = s.rev;
      try {
        const w = await api.saveYaml(s.workflowId!, { edits, baseHash: s.sourceHash ?? '' });
        set({ saving: false });
        takeYamlAnswer(w, revAtSave);
        if (place) {
          set({ nodes: get().nodes.map((n) => (n.id === place.id ? { ...n, position: place.position } : n)) });
          schedulePositions();
        }
        return true;
      } catch (e) {
        return onYamlError(e);
      }
    },

    addYamlNode: async (kind, position) => {
      if (!yamlEditable()) return null;
      const id = newYamlNodeId(kind, get().nodes.map((n) => n.id));
      const ok = await get().applyYamlEdits([yamlEdits.addNode(id, kind)], { id, position: { x: Math.round(position.x), y: Math.round(position.y) } });
      return ok ? id : null;
    },

    setYamlView: (v) => {
      if (get().yamlView === v) return;
      set({ yamlView: v });
      // Refit once the canvas has its new size (after layout and React Flow's resize observer).
      if (typeof requestAnimationFrame === 'function')
        requestAnimationFrame(() => requestAnimationFrame(() => set({ fitRequest: get().fitRequest + 1 })));
    },

    resolveYamlConflict: async (choice) => {
      const s = get();
      const c = s.yamlConflict;
      if (!c || !s.workflowId) return false;
      if (choice === 'disk') {
        await get().reloadFromServer();
        return true;
      }
      set({ saving: true });
      const revAtSave = s.rev;
      try {
        const w = await api.saveYaml(s.workflowId, { source: c.yours ?? s.source, baseHash: c.diskHash });
        set({ saving: false, source: c.yours ?? s.source });
        takeYamlAnswer(w, revAtSave);
        return true;
      } catch (e) {
        return onYamlError(e);
      }
    },
  };
});

/** A canvas edit the server refused (e.g. a dependency cycle): say why; a conflict has its own view. */
function reportYamlError(what: string) {
  return (e: unknown) => {
    if (e instanceof ApiError && e.conflict) return;
    useApp.getState().toast(`Could not ${what}: ${errorMessage(e)}`, 'error');
  };
}

/** Puts a YAML workflow's stored node positions (kept by the server outside the file) on its canvas. */
async function overlayPositions(id: string): Promise<void> {
  try {
    const p = await api.getYamlPositions(id);
    const s = useEditor.getState();
    if (s.workflowId !== id || !p.positions || Object.keys(p.positions).length === 0) return;
    useEditor.setState({ nodes: keepPositions(s.nodes, [], p.positions), fitRequest: s.fitRequest + 1 });
  } catch {
    // No stored positions: the projection's layout stays.
  }
}

/** For tests: reset module-level state. */
export function resetEditorModuleState(): void {
  clipboard = null;
  dragging = false;
  if (positionsTimer) clearTimeout(positionsTimer);
  positionsTimer = null;
}
