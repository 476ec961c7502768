// The YAML file editor: the open YAML workflow's file (its text as typed,
// the text on disk and its hash, the view, a save's conflict) and every
// write to it (typed text, structured edits of canvas gestures and the
// step inspector). Its canvas is the graph editor store's: this store
// pushes the file's projection there and stores node positions aside.
import type { Connection } from '@xyflow/react';
import { create } from 'zustand';
import { api, ApiError } from '../api/client';
import type { Workflow, YamlConflictBody, YamlEdit, YamlNodeKind } from '../api/types';
import { deletionEdits, newYamlNodeId, yamlEdits } from '../editor/yaml';
import { isIncluded } from '../graph/groups';
import { useEditor, type EditorStore } from './editor';

/** How a YAML workflow is shown: its canvas, its text, or both side by side. */
export type YamlView = 'canvas' | 'text' | 'split';

/** Milliseconds after the last node drag before YAML node positions are stored. */
export const POSITIONS_DEBOUNCE_MS = 400;

export type YamlFileState = {
  /** The open YAML workflow; null while a drawn workflow is open. */
  workflowId: string | null;
  /** The server saves the file (else it is read-only here). */
  editable: boolean;
  /** The file's path in the workflows folder. */
  path: string;
  /** The text as typed. */
  source: string;
  /** The file's text as last loaded or written; `source` differs while typed text is unsaved. */
  saved: string;
  /** The hash of `saved`: the baseHash of the next write. */
  sourceHash: string | null;
  /** Why the file cannot run here, from the server; null if it can. */
  runBlocker: string | null;
  view: YamlView;
  /** A write refused because the file changed on disk. */
  conflict: YamlConflictBody | null;
  saving: boolean;

  /** Takes a YAML workflow the server answered a load with. */
  take: (w: Workflow) => void;
  /** A drawn workflow (or none) is open. */
  clear: () => void;
  /** The text as typed (unsaved until save). */
  setSource: (text: string) => void;
  setView: (v: YamlView) => void;
  /** Writes the typed text. */
  save: () => Promise<boolean>;
  /** Applies structured edits to the file on the server (writing typed text first). */
  applyEdits: (edits: YamlEdit[], place?: { id: string; position: { x: number; y: number } }) => Promise<boolean>;
  addNode: (kind: YamlNodeKind, position: { x: number; y: number }) => Promise<string | null>;
  /** A canvas connection: the target waits for the source (addDependency). */
  connect: (c: Connection) => Promise<boolean>;
  /** Deletes the canvas selection from the file (steps, and dependencies between steps that stay). */
  deleteSelected: () => Promise<boolean>;
  /** Loads the file as it is on disk (typed text is dropped). */
  reload: () => Promise<void>;
  /** Conflict: load the file as it is on disk, or save mine over it. */
  resolveConflict: (choice: 'disk' | 'mine') => Promise<boolean>;
  dismissConflict: () => void;
};

export const isYamlDirty = (s: Pick<YamlFileState, 'source' | 'saved' | 'workflowId'>) => s.workflowId !== null && s.source !== s.saved;

function initialData() {
  return {
    workflowId: null,
    editable: false,
    path: '',
    source: '',
    saved: '',
    sourceHash: null,
    runBlocker: null,
    view: 'canvas' as YamlView,
    conflict: null,
    saving: false,
  } satisfies Partial<YamlFileState>;
}

/** A YAML file store driving the canvas of `editor` (the app's: useEditor). */
export function createYamlFileStore(editor: EditorStore = useEditor) {
  return create<YamlFileState>((set, get) => {
    let positionsTimer: ReturnType<typeof setTimeout> | null = null;
    const writable = () => get().workflowId !== null && get().editable;

    const storePositions = () => {
      if (positionsTimer) clearTimeout(positionsTimer);
      positionsTimer = setTimeout(() => {
        positionsTimer = null;
        const id = get().workflowId;
        if (!id || !writable()) return;
        const positions = Object.fromEntries(
          editor.getState().nodes.map((n) => [n.id, { x: Math.round(n.position.x), y: Math.round(n.position.y) }]),
        );
        api.putYamlPositions(id, positions).catch(() => {
          /* positions are a convenience: the next drag tries again */
        });
      }, POSITIONS_DEBOUNCE_MS);
    };
    // Drags and Auto-layout on a YAML canvas: store where the nodes are.
    editor.subscribe((s, prev) => {
      if (s.positionsRev !== prev.positionsRev && s.kind === 'yaml' && s.workflowId === get().workflowId) storePositions();
    });

    /** Puts the file's stored node positions (kept by the server outside the file) on its canvas. */
    const overlayPositions = async (id: string) => {
      try {
        const p = await api.getYamlPositions(id);
        if (get().workflowId !== id || editor.getState().workflowId !== id) return;
        if (p.positions && Object.keys(p.positions).length > 0) editor.getState().placeNodes(p.positions, true);
      } catch {
        // No stored positions: the projection's layout stays.
      }
    };

    /** Takes the workflow a write was answered with; `sent` is the text the write started from. */
    const takeAnswer = (w: Workflow, sent: string) => {
      const s = get();
      const typedSince = s.source !== sent;
      const text = w.source ?? s.saved;
      set({
        source: typedSince ? s.source : text,
        saved: text,
        sourceHash: w.sourceHash ?? s.sourceHash,
        editable: w.editable === true,
        runBlocker: w.runBlocker || null,
        conflict: null,
        saving: false,
      });
      const ed = editor.getState();
      editor.setState({ name: w.name ?? ed.name, description: w.description ?? ed.description });
      // Text typed meanwhile keeps its own (live) projection.
      if (!typedSince) ed.applyProjection(w.graph);
    };
    const onError = (e: unknown): never => {
      if (e instanceof ApiError && e.conflict && e.body && typeof e.body === 'object' && 'disk' in e.body) {
        set({ saving: false, conflict: e.body as YamlConflictBody });
      } else {
        set({ saving: false });
      }
      throw e;
    };

    return {
      ...initialData(),

      take: (w) => {
        const text = w.source ?? '';
        set({
          workflowId: w.id,
          editable: w.editable === true,
          path: w.path ?? '',
          source: text,
          saved: text,
          sourceHash: w.sourceHash ?? null,
          runBlocker: w.runBlocker || null,
          conflict: null,
          saving: false,
        });
        void overlayPositions(w.id);
      },

      clear: () => {
        if (positionsTimer) clearTimeout(positionsTimer);
        positionsTimer = null;
        set({ ...initialData(), view: get().view });
      },

      setSource: (text) => {
        if (get().source === text) return;
        set({ source: text });
      },

      setView: (v) => {
        if (get().view === v) return;
        set({ view: v });
        // Refit once the canvas has its new size (after layout and React Flow's resize observer).
        if (typeof requestAnimationFrame === 'function')
          requestAnimationFrame(() => requestAnimationFrame(() => editor.getState().requestFit()));
      },

      save: async () => {
        const s = get();
        if (!writable() || s.saving) return false;
        set({ saving: true });
        try {
          const w = await api.saveYaml(s.workflowId!, { source: s.source, baseHash: s.sourceHash ?? '' });
          takeAnswer(w, s.source);
          return true;
        } catch (e) {
          return onError(e);
        }
      },

      applyEdits: async (edits, place) => {
        if (!writable()) return false;
        if (isYamlDirty(get())) {
          // Typed text first: the edits apply to the file as saved.
          const ok = await get().save();
          if (!ok) return false;
        }
        const s = get();
        if (s.saving) return false;
        set({ saving: true });
        try {
          const w = await api.saveYaml(s.workflowId!, { edits, baseHash: s.sourceHash ?? '' });
          takeAnswer(w, s.source);
          if (place) {
            editor.getState().placeNodes({ [place.id]: place.position });
            storePositions();
          }
          return true;
        } catch (e) {
          return onError(e);
        }
      },

      addNode: async (kind, position) => {
        if (!writable()) return null;
        const id = newYamlNodeId(kind, editor.getState().nodes.map((n) => n.id));
        const ok = await get().applyEdits([yamlEdits.addNode(id, kind)], {
          id,
          position: { x: Math.round(position.x), y: Math.round(position.y) },
        });
        return ok ? id : null;
      },

      connect: async (c) => {
        const nodes = editor.getState().nodes;
        const edges = editor.getState().edges;
        if (!c.source || !c.target || c.source === c.target) return false;
        if (edges.some((e) => e.source === c.source && e.target === c.target)) return false;
        if (!nodes.some((n) => n.id === c.source) || !nodes.some((n) => n.id === c.target)) return false;
        return get().applyEdits([yamlEdits.connect(c.source, c.target)]);
      },

      deleteSelected: async () => {
        const { nodes, edges } = editor.getState();
        // Nodes an include inlined, and their edges, are not in the file.
        const included = new Set(nodes.filter(isIncluded).map((n) => n.id));
        const edits = deletionEdits(
          nodes.filter((n) => !included.has(n.id)),
          edges.filter((e) => !included.has(e.source) && !included.has(e.target)),
        );
        if (edits.length === 0) return false;
        return get().applyEdits(edits);
      },

      reload: async () => {
        const id = get().workflowId;
        if (!id) return;
        const w = await api.getWorkflow(id);
        if (get().workflowId !== id) return;
        editor.getState().showWorkflow(w, editor.getState().nodes);
        get().take(w);
      },

      resolveConflict: async (choice) => {
        const s = get();
        const c = s.conflict;
        if (!c || !s.workflowId) return false;
        if (choice === 'disk') {
          await get().reload();
          return true;
        }
        set({ saving: true });
        const mine = c.yours ?? s.source;
        try {
          const w = await api.saveYaml(s.workflowId, { source: mine, baseHash: c.diskHash });
          set({ source: mine });
          takeAnswer(w, mine);
          return true;
        } catch (e) {
          return onError(e);
        }
      },

      dismissConflict: () => set({ conflict: null }),
    };
  });
}

export type YamlFileStore = ReturnType<typeof createYamlFileStore>;

export const useYamlFile = createYamlFileStore();

/** For tests: back to a fresh store's state. */
export function resetYamlFileStore(store: YamlFileStore = useYamlFile): void {
  store.getState().clear();
  store.setState({ view: 'canvas' });
}
