// The editor's toolbar: name, view, undo/redo, layout and fit, import and
// export, save, run (with why it may not), and the keyboard shortcuts.

import { useCallback, useEffect, useRef, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { api, ApiError, errorMessage } from '../api/client';
import { toGraph } from '../graph/serialize';
import { useApp } from '../store/app';
import { isDirty, useEditor } from '../store/editor';
import { deleteSelected, hasUnsavedChanges, redo, undo } from '../store/editing';
import { navigate, runPath, workflowPath } from '../store/router';
import { indexProblems, runBlocker, useValidation, yamlRunBlocker } from '../store/validation';
import { canRedoYaml, canUndoYaml, isYamlDirty, useYamlFile, type YamlView } from '../store/yamlFile';
import { useFit } from './Canvas';
import { downloadJson, importGraphText, safeFileName, type ImportResult } from './importExport';
import { PanelToggle } from './PanelToggle';
import { isTypingTarget } from './Shortcuts';
import { mayDiscardDraft, useGallery } from './TemplateGallery';

export type ImportReport = { file: string } & ImportResult;

/**
 * Closes the toolbar's More menu after an action picked from it. A no-op
 * when it is not open: with room, its buttons sit in the toolbar itself.
 */
function closeMenuOf(el: Element) {
  const menu = el.closest('[popover]');
  if (menu instanceof HTMLElement && typeof menu.togglePopover === 'function') menu.togglePopover(false);
}

/** The YAML editor's save model, in a sentence (tooltips; README). */
export const SAVE_MODEL =
  'Every change goes to the file as you make it: canvas gestures and inspector fields at once, typed text when you pause and it has no errors. Undo (Ctrl+Z) takes back one write at a time.';

/** Canvas / Split / Text for a YAML workflow. */
function YamlViewToggle() {
  const view = useYamlFile((s) => s.view);
  const setView = useYamlFile((s) => s.setView);
  const views: Array<[YamlView, string]> = [
    ['canvas', 'Canvas'],
    ['split', 'Split'],
    ['text', 'Text'],
  ];
  return (
    <div className="segmented" role="group" aria-label="YAML view">
      {views.map(([v, label]) => (
        <button
          key={v}
          className={`segmented__btn${view === v ? ' is-active' : ''}`}
          aria-pressed={view === v}
          onClick={() => setView(v)}
          data-testid={`yaml-view-${v}`}
        >
          {label}
        </button>
      ))}
    </div>
  );
}


export function Toolbar({
  snap,
  setSnap,
  onImported,
  onShowProblems,
}: {
  snap: boolean;
  setSnap: (v: boolean) => void;
  onImported: (r: ImportReport | null) => void;
  /** Opens the Problems tab (the run blocker's link). */
  onShowProblems: () => void;
}) {
  const fit = useFit();
  const name = useEditor((s) => s.name);
  const kind = useEditor((s) => s.kind);
  const graphDirty = useEditor(isDirty);
  const yamlDirty = useYamlFile(isYamlDirty);
  const dirty = kind === 'yaml' ? yamlDirty : graphDirty;
  const graphSaving = useEditor((s) => s.saving);
  const yamlSaving = useYamlFile((s) => s.saving);
  const saving = kind === 'yaml' ? yamlSaving : graphSaving;
  const graphCanUndo = useEditor((s) => s.history.past.length > 0);
  const graphCanRedo = useEditor((s) => s.history.future.length > 0);
  const yamlCanUndo = useYamlFile(canUndoYaml);
  const yamlCanRedo = useYamlFile(canRedoYaml);
  const undoWhat = useYamlFile((s) => (isYamlDirty(s) ? 'the typed text' : s.history.past[s.history.past.length - 1]?.label));
  const redoWhat = useYamlFile((s) => s.history.future[s.history.future.length - 1]?.label);
  const canUndo = kind === 'yaml' ? yamlCanUndo : graphCanUndo;
  const canRedo = kind === 'yaml' ? yamlCanRedo : graphCanRedo;
  const setMeta = useEditor((s) => s.setMeta);
  const server = useApp((s) => s.server);
  const toast = useApp((s) => s.toast);
  const vStatus = useValidation((s) => s.status);
  const vErrors = useValidation((s) => s.errors);
  const [input, setInput] = useState('');
  const [starting, setStarting] = useState(false);
  const fileRef = useRef<HTMLInputElement>(null);
  const editable = useYamlFile((s) => s.editable);
  const yamlPath = useYamlFile((s) => s.path);
  const yamlMode = kind === 'yaml';
  const readOnly = yamlMode && !editable;
  const yamlSource = useValidation((s) => s.yamlSource);
  const yamlState = useYamlFile(useShallow((s) => ({ source: s.source, saved: s.saved, runBlocker: s.runBlocker, pending: s.pending })));
  const blocker = yamlMode
    ? yamlRunBlocker({ errors: vErrors, yamlSource }, yamlState, server !== 'unreachable')
    : runBlocker({ status: vStatus, errors: vErrors }, server !== 'unreachable');
  const textErrors = yamlMode && yamlSource === yamlState.source ? vErrors : 0;

  const save = useCallback(async () => {
    try {
      const wasNew = useEditor.getState().workflowId === null;
      const ok = useEditor.getState().kind === 'yaml' ? await useYamlFile.getState().save() : await useEditor.getState().save();
      if (!ok) return;
      toast('Saved', 'success');
      const id = useEditor.getState().workflowId;
      if (wasNew && id) navigate(workflowPath(id), { replace: true, force: true });
      void useApp.getState().loadWorkflows();
    } catch (e) {
      if (!(e instanceof ApiError && e.conflict)) toast(`Save failed: ${errorMessage(e)}`, 'error');
    }
  }, [toast]);

  const run = async () => {
    if (blocker || starting) return;
    setStarting(true);
    try {
      let s = useEditor.getState();
      if (!readOnly && (hasUnsavedChanges() || s.workflowId === null)) {
        const wasNew = s.workflowId === null;
        if (s.kind === 'yaml') await useYamlFile.getState().save();
        else await s.save();
        s = useEditor.getState();
        if (wasNew && s.workflowId) navigate(workflowPath(s.workflowId), { replace: true, force: true });
        void useApp.getState().loadWorkflows();
      }
      const body = s.workflowId ? { workflowId: s.workflowId } : { graph: toGraph(s.nodes, s.edges) };
      const r = await api.createRun(input ? { ...body, input } : body);
      navigate(runPath(r.runId));
    } catch (e) {
      if (e instanceof ApiError && e.problems.length) {
        useValidation.setState({ status: 'done', problems: e.problems, ...indexProblems(e.problems) });
        toast(`Run refused: ${e.message}`, 'error');
      } else if (!(e instanceof ApiError && e.conflict)) {
        toast(`Could not start the run: ${errorMessage(e)}`, 'error');
      }
    } finally {
      setStarting(false);
    }
  };

  const exportGraph = () => {
    const s = useEditor.getState();
    downloadJson(`${safeFileName(s.name)}.json`, toGraph(s.nodes, s.edges));
  };
  const onFile = async (f: File | undefined) => {
    if (!f) return;
    try {
      const r = await importGraphText(await f.text());
      const left = r.dropped.length ? ` ${r.dropped.length} edge${r.dropped.length === 1 ? '' : 's'} to missing nodes will be left out.` : '';
      if (!mayDiscardDraft(`replace the open graph with ${f.name}${left ? ` (${left.trim()})` : ''}`)) return;
      useEditor.getState().replaceGraph(r.graph);
      onImported({ file: f.name, ...r });
      toast([`Imported ${f.name}.`, ...r.notes].join(' '), r.dropped.length ? 'info' : 'success');
    } catch (e) {
      toast(`Import failed: ${errorMessage(e)}`, 'error');
    } finally {
      if (fileRef.current) fileRef.current.value = '';
    }
  };

  // Keyboard shortcuts. Ctrl+S works everywhere; the rest not while typing.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const mod = e.ctrlKey || e.metaKey;
      const k = e.key.toLowerCase();
      if (mod && k === 's') {
        e.preventDefault();
        if (!readOnly) void save();
        return;
      }
      if (isTypingTarget(e.target) || useGallery.getState().open) return;
      const ed = useEditor.getState();
      if (mod && k === 'z' && !e.shiftKey) {
        e.preventDefault();
        undo();
      } else if ((mod && k === 'z' && e.shiftKey) || (mod && k === 'y')) {
        e.preventDefault();
        redo();
      } else if (mod && k === 'c') {
        if (ed.copy()) e.preventDefault();
      } else if (mod && k === 'v') {
        if (ed.paste()) e.preventDefault();
      } else if (mod && k === 'a') {
        e.preventDefault();
        ed.selectAll();
      } else if ((e.key === 'Delete' || e.key === 'Backspace') && !mod) {
        e.preventDefault();
        deleteSelected();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [save, readOnly]);

  return (
    // One row at any width (editor.css): with less room, less used controls
    // show icons only (their text stays, for assistive tech), then move to the
    // More menu; names, the path and the status slots truncate.
    <div className="toolbar toolbar--editor" role="toolbar" aria-label="Workflow actions">
      <label className="toolbar__name">
        <span className="sr-only">Workflow name</span>
        <input
          value={name}
          readOnly={yamlMode}
          title={yamlMode ? 'The name is the file\'s name: field (edit it in the Text view)' : undefined}
          onChange={(e) => setMeta({ name: e.target.value })}
          aria-label="Workflow name"
          data-testid="workflow-name"
        />
      </label>
      {readOnly && <span className="kind kind--yaml">YAML · read-only</span>}
      {yamlMode && editable && (
        <span className="kind kind--yaml" title={yamlPath} data-testid="yaml-path">
          YAML · {yamlPath}
        </span>
      )}
      {yamlMode && <YamlViewToggle />}
      {/* A slot of its own width: what it says changes, the toolbar's layout does not. */}
      <span className={`toolbar__status${yamlMode ? ' is-yaml' : ''}`}>
        {dirty && !readOnly && (
          <span className="dirty" data-testid="dirty-indicator" title="Unsaved changes">
            {/* A YAML file's state says more beside it: the dot, and words for screen readers. */}● <span className={yamlMode && editable ? 'sr-only' : ''}>unsaved</span>
          </span>
        )}
        {yamlMode && editable && (dirty || yamlState.pending > 0) && (
          <span
            className={`save-state${textErrors && dirty ? ' is-blocked' : ''}`}
            data-testid="save-state"
            role="status"
            title={
              yamlState.pending > 0
                ? 'Writing to the file'
                : textErrors
                  ? `Not saved: the text has ${textErrors} error${textErrors === 1 ? '' : 's'}. Fix them (or Save anyway). ${SAVE_MODEL}`
                  : SAVE_MODEL
            }
          >
            {yamlState.pending > 0 ? 'Saving…' : dirty ? (textErrors ? `Not saved: ${textErrors} error${textErrors === 1 ? '' : 's'}` : 'Saves on pause') : ''}
          </span>
        )}
      </span>
      <div className="toolbar__group">
        <PanelToggle side="left" label="palette and workflow list" />
        {!readOnly && (
          <>
            <button
              className="btn"
              onClick={undo}
              disabled={!canUndo}
              aria-label={yamlMode && undoWhat ? `Undo: ${undoWhat}` : 'Undo'}
              title={`Undo${yamlMode && undoWhat ? `: ${undoWhat}` : ''} (Ctrl+Z)`}
              data-testid="undo"
            >
              ↶
            </button>
            <button
              className="btn"
              onClick={redo}
              disabled={!canRedo}
              aria-label={yamlMode && redoWhat ? `Redo: ${redoWhat}` : 'Redo'}
              title={`Redo${yamlMode && redoWhat ? `: ${redoWhat}` : ''} (Ctrl+Shift+Z / Ctrl+Y)`}
              data-testid="redo"
            >
              ↷
            </button>
          </>
        )}
        {/* Inline in the toolbar, or (narrow) the popover the More button opens. */}
        <div className="toolbar__more" id="toolbar-more" popover="auto" data-testid="toolbar-more-menu">
          <button
            className="btn toolbar__icon toolbar__icon--layout"
            onClick={(e) => {
              closeMenuOf(e.currentTarget);
              void useEditor.getState().autoLayout();
            }}
            title="Arrange nodes in layers"
            data-testid="auto-layout"
            disabled={readOnly}
          >
            <span className="toolbar__label">Auto-layout</span>
          </button>
          <button
            className="btn toolbar__icon toolbar__icon--fit"
            onClick={(e) => {
              closeMenuOf(e.currentTarget);
              fit();
            }}
            title="Show the whole graph"
            data-testid="fit-view"
          >
            <span className="toolbar__label">Fit</span>
          </button>
          <label className="check check--inline toolbar__icon toolbar__icon--snap" title="Snap nodes to a 16px grid while dragging">
            <input type="checkbox" checked={snap} onChange={(e) => setSnap(e.target.checked)} data-testid="snap-toggle" />
            <span className="toolbar__label">Snap</span>
          </label>
        </div>
        <button className="btn toolbar__more-btn" popoverTarget="toolbar-more" aria-label="More actions" title="More: Auto-layout, Fit, Snap" data-testid="toolbar-more">
          ⋯
        </button>
      </div>
      <div className="toolbar__group">
        {!yamlMode && (
          <>
            <button className="btn" onClick={() => fileRef.current?.click()} data-testid="import" title="Import graph JSON (legacy files are converted)">
              Import
            </button>
            <input
              ref={fileRef}
              type="file"
              accept="application/json,.json"
              hidden
              onChange={(e) => void onFile(e.target.files?.[0])}
              data-testid="import-file"
              aria-label="Import graph file"
            />
          </>
        )}
        {/* A YAML workflow is its file: no graph JSON to download. */}
        {!yamlMode && (
          <button className="btn" onClick={exportGraph} data-testid="export" title="Download the graph as JSON">
            Export
          </button>
        )}
        {!readOnly && (
          <button
            className="btn btn--primary"
            onClick={() => void save()}
            disabled={saving || (yamlMode && !dirty)}
            data-testid="save"
            title={yamlMode ? `${SAVE_MODEL} Save writes typed text now, errors or not (Ctrl+S).` : 'Save (Ctrl+S)'}
          >
            {saving ? 'Saving…' : yamlMode && !dirty ? 'Saved' : 'Save'}
          </button>
        )}
      </div>
      <div className="toolbar__group toolbar__run">
        <label>
          <span className="sr-only">Run input</span>
          <input
            className="run-input"
            value={input}
            onChange={(e) => setInput(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter') void run();
            }}
            placeholder="Run input (optional)"
            aria-label="Run input"
            data-testid="run-input"
          />
        </label>
        <button
          className="btn btn--run"
          onClick={() => void run()}
          disabled={blocker !== null || starting}
          aria-describedby="run-blocker"
          data-testid="run"
        >
          {starting ? 'Starting…' : !readOnly && dirty ? 'Save & Run' : 'Run'}
        </button>
        <span id="run-blocker" className="run-blocker" role="status" data-testid="run-blocker" title={blocker ?? undefined}>
          {blocker && (
            <button className="link run-blocker__btn" onClick={onShowProblems} title={`${blocker}: show the problems`}>
              <span className="run-blocker__text">{blocker}</span>
            </button>
          )}
        </span>
      </div>
    </div>
  );
}

