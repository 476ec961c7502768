// The YAML file editor: the open YAML workflow's file (its text as typed,
// the text on disk and its hash, the view, a write's conflict) and every
// write to it. Its canvas is the graph editor store's: this store pushes
// the file's projection there and stores node positions aside.
//
// One save model: every change goes to the file as it is made. Canvas
// gestures and the step inspector's fields are structured edits (a
// one-field change is a one-line diff); typed text is written once it has
// no errors and typing pauses (or at once with Ctrl+S / Save). Every write
// is one undo step: undo writes back the text from before it (guarded by
// the hash, so it never overwrites someone else's change), redo the text
// after it. Writes go one at a time, in order.
import type { Connection } from '@xyflow/react';
import { create } from 'zustand';
import { api, ApiError } from '../api/client';
import type { Workflow, WorkflowChangedMessage, YamlConflictBody, YamlEdit, YamlNodeKind, YamlSave } from '../api/types';
import { deletionEdits, newYamlNodeId, yamlEdits } from '../editor/yaml';
import { describeDeletion, describeEdits } from '../editor/yamlHistory';
import { isIncluded } from '../graph/groups';
import { useApp } from './app';
import { useEditor, type EditorStore } from './editor';

/** How a YAML workflow is shown: its canvas, its text, or both side by side. */
export type YamlView = 'canvas' | 'text' | 'split';

/** Milliseconds after the last node drag before YAML node positions are stored. */
export const POSITIONS_DEBOUNCE_MS = 400;
/** Idle time after typed text was found free of errors before it is written. */
export const AUTOSAVE_MS = 700;
/** Typed-text writes this close together are one undo step. */
export const TEXT_COALESCE_MS = 10_000;
/** Undo steps kept. */
export const YAML_HISTORY_LIMIT = 100;

type Positions = Record<string, { x: number; y: number }>;

/** One write to the file: what undo writes back, and what redo writes again. */
export type YamlWrite = {
  id: number;
  /** What it did, e.g. "Delete step fetch" (undo button titles, toasts). */
  label: string;
  kind: 'edit' | 'text';
  before: string;
  after: string;
  /** Node positions before it: a step undo brings back gets its old spot. */
  posBefore: Positions;
  at: number;
};

/** The file changed on disk since it was loaded or last written here (deleted: it is gone; source and hash are then ""). */
export type DiskChange = { source: string; hash: string; deleted?: boolean };

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
  /** A write refused because the file changed on disk (or a disk change being merged). */
  conflict: YamlConflictBody | null;
  /** Writes queued or in flight. */
  pending: number;
  saving: boolean;
  history: { past: YamlWrite[]; future: YamlWrite[] };
  writeSeq: number;
  /** The last live check of typed text: its error count. */
  checked: { source: string; errors: number } | null;
  /** Seen by checkDisk: the file on disk is not the text this editor knows. */
  diskChange: DiskChange | null;
  /** GET /api/ws is open: disk changes are pushed (workflow_changed), so the editor need not poll. */
  pushLive: boolean;

  /** Takes a YAML workflow the server answered a load with. */
  take: (w: Workflow) => void;
  /** A drawn workflow (or none) is open. */
  clear: () => void;
  /** The text as typed (written once it is free of errors and typing pauses). */
  setSource: (text: string) => void;
  /** Live validation's verdict on `source`; text without errors is written after AUTOSAVE_MS. */
  noteChecked: (source: string, errors: number) => void;
  setView: (v: YamlView) => void;
  /** Writes the typed text now (Save, Ctrl+S), errors or not. */
  save: () => Promise<boolean>;
  /** Applies structured edits to the file (writing typed text first); one undo step labelled `label`. */
  applyEdits: (edits: YamlEdit[], o?: { label?: string; place?: { id: string; position: { x: number; y: number } }; toast?: string }) => Promise<boolean>;
  addNode: (kind: YamlNodeKind, position: { x: number; y: number }) => Promise<string | null>;
  /** A canvas connection: the target waits for the source (addDependency). */
  connect: (c: Connection) => Promise<boolean>;
  /** Deletes the canvas selection from the file (steps, and dependencies between steps that stay); says so with Undo. */
  deleteSelected: () => Promise<boolean>;
  /** Typed text first (dropped), then the last write (its text before is written back). */
  undo: () => Promise<boolean>;
  redo: () => Promise<boolean>;
  /** Compares the file on disk with the text this editor knows (diskChange). */
  checkDisk: () => Promise<void>;
  /**
   * A workflow_changed message of GET /api/ws. For the open file with a hash
   * other than the one this editor wrote or loaded, it fetches the file
   * (checkDisk: the banner offers to reload or merge); its own writes carry
   * its own hash and change nothing.
   */
  noteWorkflowChanged: (m: WorkflowChangedMessage) => void;
  /** GET /api/ws opened or closed. */
  setPushLive: (live: boolean) => void;
  /** Loads the file as it is on disk (typed text is dropped; undo starts afresh). */
  reload: () => Promise<void>;
  /** Opens the merge view for a disk change (yours: the text here). */
  mergeDiskChange: () => void;
  /** Conflict: load the file as it is on disk, write mine over it, or write a merge. */
  resolveConflict: (choice: 'disk' | 'mine' | { merged: string }) => Promise<boolean>;
  dismissConflict: () => void;
};

export const isYamlDirty = (s: Pick<YamlFileState, 'source' | 'saved' | 'workflowId'>) => s.workflowId !== null && s.source !== s.saved;

export const canUndoYaml = (s: YamlFileState) => s.editable && (isYamlDirty(s) || s.history.past.length > 0);
export const canRedoYaml = (s: YamlFileState) => s.editable && !isYamlDirty(s) && s.history.future.length > 0;

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
    pending: 0,
    saving: false,
    history: { past: [] as YamlWrite[], future: [] as YamlWrite[] },
    writeSeq: 0,
    checked: null,
    diskChange: null,
  } satisfies Partial<YamlFileState>;
}

type WriteBody = { edits: YamlEdit[] } | { source: string };

/** A YAML file store driving the canvas of `editor` (the app's: useEditor). */
export function createYamlFileStore(editor: EditorStore = useEditor) {
  return create<YamlFileState>((set, get) => {
    let positionsTimer: ReturnType<typeof setTimeout> | null = null;
    let autosaveTimer: ReturnType<typeof setTimeout> | null = null;
    /** The write queue: each write starts when the one before has answered. */
    let chain: Promise<unknown> = Promise.resolve();
    /** Bumped by take/clear: queued writes of another file (or load) do nothing. */
    let epoch = 0;
    /**
     * A workflow_changed with another hash came while a write was on its
     * way: it may be that write's own announcement (its answer not here
     * yet), or someone else's change. Once the writes are answered the
     * disk is checked.
     */
    let pushWhileWriting = false;

    const writable = () => get().workflowId !== null && get().editable;
    const positions = (): Positions =>
      Object.fromEntries(editor.getState().nodes.map((n) => [n.id, { x: Math.round(n.position.x), y: Math.round(n.position.y) }]));
    const stopAutosave = () => {
      if (autosaveTimer) clearTimeout(autosaveTimer);
      autosaveTimer = null;
    };

    const storePositions = () => {
      if (positionsTimer) clearTimeout(positionsTimer);
      positionsTimer = setTimeout(() => {
        positionsTimer = null;
        const id = get().workflowId;
        if (!id || !writable()) return;
        api.putYamlPositions(id, positions()).catch(() => {
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

    /** Takes the workflow a write was answered with; `sent` is the typed text when the write started. */
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
        diskChange: null,
      });
      const ed = editor.getState();
      editor.setState({ name: w.name ?? ed.name, description: w.description ?? ed.description });
      // Text typed meanwhile keeps its own (live) projection.
      if (!typedSince) ed.applyProjection(w.graph);
    };

    const record = (entry: Omit<YamlWrite, 'id' | 'at'>): YamlWrite => {
      const s = get();
      const now = Date.now();
      const top = s.history.past[s.history.past.length - 1];
      if (entry.kind === 'text' && top?.kind === 'text' && s.history.future.length === 0 && now - top.at < TEXT_COALESCE_MS && top.after === entry.before) {
        const merged = { ...top, after: entry.after, at: now };
        set({ history: { past: [...s.history.past.slice(0, -1), merged], future: [] } });
        return merged;
      }
      const w: YamlWrite = { ...entry, id: s.writeSeq + 1, at: now };
      const past = [...s.history.past, w].slice(-YAML_HISTORY_LIMIT);
      set({ history: { past, future: [] }, writeSeq: w.id });
      return w;
    };

    /**
     * Queues one write. `body` is computed when its turn comes (from the
     * state then: the hash, the typed text). Resolves with the workflow the
     * server answered (null when nothing was sent), after `then` ran.
     */
    const enqueue = <T>(
      body: () => WriteBody | null,
      then: (w: Workflow, before: string, posBefore: Positions) => T,
      resolving = false,
    ): Promise<T | null> => {
      const my = epoch;
      set({ pending: get().pending + 1, saving: true });
      const run = async (): Promise<T | null> => {
        try {
          const s = get();
          if (my !== epoch || !writable()) return null;
          // The conflict view's own write (mine, a merge) is the one that may go while it is open.
          if (s.conflict && !resolving) throw new Error('the file changed on disk: resolve that first (the conflict view)');
          const b = body();
          if (!b) return null;
          const before = s.saved;
          const posBefore = positions();
          const sent = get().source;
          let w: Workflow;
          try {
            w = await api.saveYaml(s.workflowId!, { ...b, baseHash: s.sourceHash ?? '' } as YamlSave);
          } catch (e) {
            if (my === epoch && e instanceof ApiError && e.conflict && e.body && typeof e.body === 'object' && 'disk' in e.body) {
              set({ conflict: e.body as YamlConflictBody });
            }
            throw e;
          }
          if (my !== epoch) return null;
          takeAnswer(w, sent);
          return then(w, before, posBefore);
        } finally {
          if (my === epoch) {
            const pending = Math.max(0, get().pending - 1);
            set({ pending, saving: pending > 0 });
            if (pending === 0 && pushWhileWriting) {
              pushWhileWriting = false;
              void get().checkDisk();
            }
          }
        }
      };
      const p = chain.then(run, run);
      chain = p.catch(() => undefined);
      return p;
    };

    /** The file's errors as the server answered a write. */
    const errorsOf = (w: Workflow) => (w.problems ?? []).filter((p) => p.severity === 'error').length;

    /**
     * Writes the text before (undo) or after (redo) the newest (undo) or
     * last undone (redo) write, picked when its turn in the queue comes: a
     * Ctrl+Z right after a gesture undoes that gesture even if its answer
     * has not arrived yet.
     */
    const rewrite = (dir: 'undo' | 'redo'): Promise<boolean> => {
      let entry: YamlWrite | undefined;
      let gone: Set<string> | null = null;
      return enqueue(
        () => {
          const h = get().history;
          entry = dir === 'undo' ? h.past[h.past.length - 1] : h.future[h.future.length - 1];
          if (!entry || (dir === 'redo' && isYamlDirty(get()))) return null;
          const target = dir === 'undo' ? entry.before : entry.after;
          const expect = dir === 'undo' ? entry.after : entry.before;
          if (get().saved !== expect) {
            useApp
              .getState()
              .toast(`Cannot ${dir} “${entry.label}”: the file changed since. Reload it from disk to start again.`, 'error');
            return null;
          }
          gone = new Set(editor.getState().nodes.map((n) => n.id));
          return { source: target };
        },
        () => {
          const e = entry!;
          const h = get().history;
          set({
            history:
              dir === 'undo'
                ? { past: h.past.filter((x) => x.id !== e.id), future: [...h.future, e] }
                : { past: [...h.past, e], future: h.future.filter((x) => x.id !== e.id) },
          });
          if (dir === 'undo' && gone) {
            // Steps the undo brought back go where they were.
            const back = Object.fromEntries(Object.entries(e.posBefore).filter(([id]) => !gone!.has(id)));
            if (Object.keys(back).length) {
              editor.getState().placeNodes(back);
              storePositions();
            }
          }
          return true;
        },
      ).then((r) => r === true);
    };

    const saveTyped = (auto: boolean): Promise<boolean> => {
      stopAutosave();
      return enqueue(
        () => {
          const s = get();
          if (!isYamlDirty(s)) return null;
          // An automatic write only of text that was checked and found free of errors.
          if (auto && (s.checked?.source !== s.source || s.checked.errors > 0)) return null;
          return { source: s.source };
        },
        (w, before, posBefore) => {
          if (w.source !== before) record({ label: 'Edit the text', kind: 'text', before, after: w.source ?? '', posBefore });
          return true;
        },
      ).then((r) => r === true);
    };

    return {
      ...initialData(),
      pushLive: false,

      take: (w) => {
        epoch++;
        pushWhileWriting = false;
        stopAutosave();
        const text = w.source ?? '';
        set({
          ...initialData(),
          view: get().view,
          workflowId: w.id,
          editable: w.editable === true,
          path: w.path ?? '',
          source: text,
          saved: text,
          sourceHash: w.sourceHash ?? null,
          runBlocker: w.runBlocker || null,
        });
        void overlayPositions(w.id);
      },

      clear: () => {
        epoch++;
        pushWhileWriting = false;
        stopAutosave();
        if (positionsTimer) clearTimeout(positionsTimer);
        positionsTimer = null;
        set({ ...initialData(), view: get().view });
      },

      setSource: (text) => {
        if (get().source === text) return;
        stopAutosave();
        set({ source: text });
      },

      noteChecked: (source, errors) => {
        set({ checked: { source, errors } });
        const s = get();
        if (errors > 0 || source !== s.source || !isYamlDirty(s) || !writable() || s.conflict) return;
        stopAutosave();
        autosaveTimer = setTimeout(() => {
          autosaveTimer = null;
          void saveTyped(true).catch(() => {
            /* a conflict opens its view; other errors wait for the next change or Save */
          });
        }, AUTOSAVE_MS);
      },

      setView: (v) => {
        if (get().view === v) return;
        set({ view: v });
        // Refit once the canvas has its new size (after layout and React Flow's resize observer).
        if (typeof requestAnimationFrame === 'function')
          requestAnimationFrame(() => requestAnimationFrame(() => editor.getState().requestFit()));
      },

      save: () => {
        if (!writable()) return Promise.resolve(false);
        return saveTyped(false);
      },

      applyEdits: async (edits, o = {}) => {
        if (!writable() || edits.length === 0) return false;
        // Typed text first: the edits apply to the file as saved.
        if (isYamlDirty(get()) && !(await saveTyped(false))) return false;
        const r = await enqueue(
          () => ({ edits }),
          (w, before, posBefore) => {
            if (o.place) {
              editor.getState().placeNodes({ [o.place.id]: o.place.position });
              storePositions();
            }
            const after = w.source ?? '';
            if (after === before) return true;
            const entry = record({ label: o.label ?? describeEdits(edits), kind: 'edit', before, after, posBefore });
            if (o.toast) {
              const errs = errorsOf(w);
              const more = errs ? ` The file now has ${errs} error${errs === 1 ? '' : 's'} (see Problems).` : '';
              useApp.getState().toast(`${o.toast}${more}`, 'info', {
                action: {
                  label: 'Undo',
                  run: () => {
                    const top = get().history.past[get().history.past.length - 1];
                    if (top?.id !== entry.id) {
                      useApp.getState().toast('Newer changes came after it: use Undo in the toolbar (Ctrl+Z), newest first.', 'info');
                      return;
                    }
                    void get().undo();
                  },
                },
              });
            }
            return true;
          },
        );
        return r === true;
      },

      addNode: async (kind, position) => {
        if (!writable()) return null;
        const id = newYamlNodeId(kind, editor.getState().nodes.map((n) => n.id));
        const ok = await get().applyEdits([yamlEdits.addNode(id, kind)], {
          label: `Add ${kind} step ${id}`,
          place: { id, position: { x: Math.round(position.x), y: Math.round(position.y) } },
        });
        return ok ? id : null;
      },

      connect: async (c) => {
        const { nodes, edges } = editor.getState();
        if (!c.source || !c.target || c.source === c.target) return false;
        if (edges.some((e) => e.source === c.source && e.target === c.target)) return false;
        if (!nodes.some((n) => n.id === c.source) || !nodes.some((n) => n.id === c.target)) return false;
        return get().applyEdits([yamlEdits.connect(c.source, c.target)], { label: `Connect ${c.source} → ${c.target}` });
      },

      deleteSelected: async () => {
        const { nodes, edges } = editor.getState();
        // Nodes an include inlined, and their edges, are not in the file.
        const included = new Set(nodes.filter(isIncluded).map((n) => n.id));
        const own = nodes.filter((n) => !included.has(n.id));
        const ownEdges = edges.filter((e) => !included.has(e.source) && !included.has(e.target));
        const edits = deletionEdits(own, ownEdges);
        if (edits.length === 0) return false;
        const d = describeDeletion(own, ownEdges);
        return get().applyEdits(edits, { label: d.label, toast: d.message });
      },

      undo: async () => {
        const s = get();
        if (!writable()) return false;
        if (isYamlDirty(s)) {
          // Typed text not written yet: undo drops it.
          stopAutosave();
          set({ source: s.saved });
          editor.getState().requestFit();
          return true;
        }
        return rewrite('undo');
      },

      redo: async () => {
        if (!writable() || isYamlDirty(get())) return false;
        return rewrite('redo');
      },

      checkDisk: async () => {
        const s = get();
        const id = s.workflowId;
        if (!id || s.pending > 0 || s.conflict) return;
        const hash = s.sourceHash;
        let w: Workflow;
        try {
          w = await api.getWorkflow(id);
        } catch {
          return; // unreachable: the header says so; the next check tries again
        }
        const now = get();
        // A write (or another load) since the check began: its answer is newer.
        if (now.workflowId !== id || now.sourceHash !== hash || now.pending > 0) return;
        if (!w.sourceHash || w.sourceHash === hash) {
          if (now.diskChange) set({ diskChange: null });
          return;
        }
        if (now.diskChange?.hash !== w.sourceHash) set({ diskChange: { source: w.source ?? '', hash: w.sourceHash } });
      },

      noteWorkflowChanged: (m) => {
        const s = get();
        if (!s.workflowId || m.id !== s.workflowId) return;
        if (m.deleted) {
          set({ diskChange: { source: '', hash: '', deleted: true } });
          return;
        }
        if (m.hash && m.hash === s.sourceHash) {
          // This editor's own write, or the disk back to the text it has.
          if (s.diskChange) set({ diskChange: null });
          return;
        }
        if (s.pending > 0) {
          pushWhileWriting = true;
          return;
        }
        void get().checkDisk();
      },

      setPushLive: (live) => {
        if (get().pushLive !== live) set({ pushLive: live });
      },

      reload: async () => {
        const id = get().workflowId;
        if (!id) return;
        const w = await api.getWorkflow(id);
        if (get().workflowId !== id) return;
        editor.getState().showWorkflow(w, editor.getState().nodes);
        get().take(w);
      },

      mergeDiskChange: () => {
        const s = get();
        const d = s.diskChange;
        if (!d) return;
        set({
          conflict: {
            error: { code: 'conflict', message: `${s.path || 'The file'} changed on disk after you opened it.` },
            yours: s.source,
            disk: d.source,
            diskHash: d.hash,
            base: s.saved,
          },
        });
      },

      resolveConflict: async (choice) => {
        const s = get();
        const c = s.conflict;
        if (!c || !s.workflowId) return false;
        if (choice === 'disk') {
          await get().reload();
          return true;
        }
        const text = choice === 'mine' ? (c.yours ?? s.source) : choice.merged;
        // Written over the disk's text (its hash); undo gives the disk's text
        // back. The view stays open until the write is answered (a second
        // conflict replaces it; a failure leaves it, to try again).
        set({ saved: c.disk, sourceHash: c.diskHash, history: { past: [], future: [] } });
        if (get().source === c.yours || choice !== 'mine') set({ source: text });
        const r = await enqueue(
          () => ({ source: text }),
          (w, before, posBefore) => {
            record({ label: choice === 'mine' ? 'Keep mine over the disk' : 'Merge with the disk', kind: 'edit', before, after: w.source ?? '', posBefore });
            return true;
          },
          true,
        );
        return r === true;
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
