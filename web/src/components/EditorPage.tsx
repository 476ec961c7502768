import { ReactFlowProvider } from '@xyflow/react';
import { lazy, Suspense, useCallback, useEffect, useRef, useState } from 'react';
import { api, ApiError, errorMessage } from '../api/client';
import { toGraph } from '../graph/serialize';
import { useApp } from '../store/app';
import { isDirty, useEditor } from '../store/editor';
import { deleteSelected, hasUnsavedChanges, newWorkflow, openWorkflow, redo, undo } from '../store/editing';
import { isYamlDirty, useYamlFile, type YamlView } from '../store/yamlFile';
import { navigate, runPath, workflowPath } from '../store/router';
import { indexProblems, runBlocker, useValidation } from '../store/validation';
import { EditorCanvas, useReadableFit } from './Canvas';
import { downloadJson, importGraphText, safeFileName, type ImportResult } from './importExport';
import { Inspector } from './Inspector';
import { Palette } from './Palette';
import { mayDiscardDraft, openGallery, TemplateGallery, useGallery } from './TemplateGallery';
import { ProblemsPanel } from './ProblemsPanel';
import { RunHistory } from './RunHistory';
import { WorkflowList } from './WorkflowList';
import { WorkflowPanel } from './WorkflowPanel';
import { YamlCreateDialog } from './YamlCreate';
import { PanelToggle } from './PanelToggle';
import { usePanels } from '../store/panels';

type Tab = 'inspect' | 'problems' | 'runs' | 'workflow';

const YamlTextEditor = lazy(() => import('./YamlTextEditor').then((m) => ({ default: m.YamlTextEditor })));

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

/** A save refused because the file changed on disk: yours, disk and base side by side. */
function YamlConflictView() {
  const c = useYamlFile((s) => s.conflict);
  const toast = useApp((s) => s.toast);
  const [busy, setBusy] = useState(false);
  if (!c) return null;
  const choose = async (choice: 'disk' | 'mine') => {
    setBusy(true);
    try {
      await useYamlFile.getState().resolveConflict(choice);
      toast(choice === 'disk' ? 'Loaded the file as it is on disk' : 'Saved your text over the file', 'success');
      void useApp.getState().loadWorkflows();
    } catch (e) {
      if (!(e instanceof ApiError && e.conflict)) toast(`Failed: ${errorMessage(e)}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  const panes: Array<[string, string, string | undefined]> = [
    ['yours', 'Yours', c.yours ?? useYamlFile.getState().source],
    ['disk', 'On disk now', c.disk],
    ['base', 'Base (what you started from)', c.base],
  ];
  return (
    <div className="modal-backdrop" role="presentation">
      <div className="modal yaml-conflict" role="dialog" aria-modal="true" aria-labelledby="yaml-conflict-title" data-testid="yaml-conflict">
        <h2 id="yaml-conflict-title">The file changed on disk</h2>
        <p className="sy-muted">{c.error.message}</p>
        <div className="yaml-conflict__panes">
          {panes.map(([id, label, text]) => (
            <section key={id} className="yaml-conflict__pane" aria-label={label}>
              <h3>{label}</h3>
              <pre className="code-block" data-testid={`yaml-conflict-${id}`}>
                {text ?? '(no longer known to the server)'}
              </pre>
            </section>
          ))}
        </div>
        <div className="modal__actions">
          <button className="btn" disabled={busy} onClick={() => void choose('disk')} data-testid="yaml-conflict-take-disk">
            Take disk
          </button>
          <button className="btn btn--danger" disabled={busy} onClick={() => void choose('mine')} data-testid="yaml-conflict-keep-mine">
            Keep mine (overwrite)
          </button>
          <button className="btn" disabled={busy} onClick={() => useYamlFile.getState().dismissConflict()} data-testid="yaml-conflict-close">
            Keep editing
          </button>
        </div>
      </div>
    </div>
  );
}

function isTypingTarget(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  if (!el || !el.tagName) return false;
  const tag = el.tagName;
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || el.isContentEditable;
}

function ConflictBanner() {
  const conflict = useEditor((s) => s.conflict);
  const toast = useApp((s) => s.toast);
  if (!conflict) return null;
  const overwrite = async () => {
    if (!confirm('Replace the other change with yours? Their version stays in the version history.')) return;
    try {
      await useEditor.getState().save({ overwrite: true });
      toast('Saved over the other change', 'success');
    } catch (e) {
      toast(`Save failed: ${errorMessage(e)}`, 'error');
    }
  };
  const reload = async () => {
    if (!confirm('Discard your unsaved changes and load the newest saved version?')) return;
    try {
      await useEditor.getState().reloadFromServer();
    } catch (e) {
      toast(`Reload failed: ${errorMessage(e)}`, 'error');
    }
  };
  return (
    <div className="banner banner--warning" role="alert" data-testid="conflict-banner">
      <div className="banner__msg">
        <strong>Save conflict.</strong> {conflict.message}
      </div>
      <div className="banner__actions">
        <button className="btn btn--small" onClick={() => void reload()} data-testid="conflict-reload">
          Load their version
        </button>
        <button className="btn btn--small btn--danger" onClick={() => void overwrite()} data-testid="conflict-overwrite">
          Overwrite with mine
        </button>
        <button className="btn btn--small" onClick={() => useEditor.getState().dismissConflict()}>
          Keep editing
        </button>
      </div>
    </div>
  );
}

type ImportReport = { file: string } & ImportResult;

/** What an import left out (edges to missing nodes); stays until dismissed. */
function ImportReportBanner({ report, onClose }: { report: ImportReport | null; onClose: () => void }) {
  if (!report || report.dropped.length === 0) return null;
  const n = report.dropped.length;
  return (
    <div className="banner banner--warning import-report" role="alert" data-testid="import-report">
      <div className="banner__msg">
        <strong>
          Imported {report.file} without {n} edge{n === 1 ? '' : 's'}:
        </strong>{' '}
        {n === 1 ? 'it names a node' : 'they name nodes'} the file does not have.
        <ul>
          {report.dropped.map((d) => (
            <li key={d} data-testid="import-dropped-edge">
              {d}
            </li>
          ))}
        </ul>
      </div>
      <div className="banner__actions">
        <button className="btn btn--small" onClick={onClose} data-testid="import-report-close">
          Dismiss
        </button>
      </div>
    </div>
  );
}

/** On a new, untouched workflow: where the templates are. */
function StarterHint() {
  const fresh = useEditor((s) => s.workflowId === null && s.kind === 'graph' && !isDirty(s) && !s.loading);
  if (!fresh) return null;
  return (
    <div className="starter-hint" data-testid="starter-hint">
      <span>New workflow: a start node wired to an agent.</span>
      <button className="btn btn--small" onClick={openGallery} data-testid="starter-templates">
        Browse templates
      </button>
    </div>
  );
}

function Toolbar({
  snap,
  setSnap,
  onImported,
}: {
  snap: boolean;
  setSnap: (v: boolean) => void;
  onImported: (r: ImportReport | null) => void;
}) {
  const fit = useReadableFit();
  const name = useEditor((s) => s.name);
  const kind = useEditor((s) => s.kind);
  const graphDirty = useEditor(isDirty);
  const yamlDirty = useYamlFile(isYamlDirty);
  const dirty = kind === 'yaml' ? yamlDirty : graphDirty;
  const graphSaving = useEditor((s) => s.saving);
  const yamlSaving = useYamlFile((s) => s.saving);
  const saving = kind === 'yaml' ? yamlSaving : graphSaving;
  const canUndo = useEditor((s) => s.history.past.length > 0);
  const canRedo = useEditor((s) => s.history.future.length > 0);
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
  const sourceBlocker = useYamlFile((s) => s.runBlocker);
  const blocker = yamlMode
    ? server === 'unreachable'
      ? 'Server unreachable'
      : sourceBlocker
    : runBlocker({ status: vStatus, errors: vErrors }, server !== 'unreachable');

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
    <div className="toolbar" role="toolbar" aria-label="Workflow actions">
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
      {dirty && !readOnly && (
        <span className="dirty" data-testid="dirty-indicator" title="Unsaved changes">
          ● unsaved
        </span>
      )}
      <div className="toolbar__group">
        <PanelToggle side="left" label="palette and workflow list" />
        {!yamlMode && (
          <>
            <button className="btn" onClick={() => useEditor.getState().undo()} disabled={!canUndo} aria-label="Undo" title="Undo (Ctrl+Z)" data-testid="undo">
              ↶
            </button>
            <button className="btn" onClick={() => useEditor.getState().redo()} disabled={!canRedo} aria-label="Redo" title="Redo (Ctrl+Shift+Z / Ctrl+Y)" data-testid="redo">
              ↷
            </button>
          </>
        )}
        <button className="btn" onClick={() => void useEditor.getState().autoLayout()} title="Arrange nodes in layers" data-testid="auto-layout" disabled={readOnly}>
          Auto-layout
        </button>
        <button className="btn" onClick={() => fit()} title="Fit the graph in view (at a readable zoom)" data-testid="fit-view">
          Fit
        </button>
        <label className="check check--inline" title="Snap nodes to a 16px grid while dragging">
          <input type="checkbox" checked={snap} onChange={(e) => setSnap(e.target.checked)} data-testid="snap-toggle" />
          Snap
        </label>
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
        <button className="btn" onClick={exportGraph} data-testid="export" title="Download the graph as JSON">
          Export
        </button>
        {!readOnly && (
          <button className="btn btn--primary" onClick={() => void save()} disabled={saving} data-testid="save" title="Save (Ctrl+S)">
            {saving ? 'Saving…' : 'Save'}
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
        <span id="run-blocker" className="run-blocker" role="status" data-testid="run-blocker">
          {blocker ?? ''}
        </span>
      </div>
    </div>
  );
}

function SidePanel({ tab, setTab }: { tab: Tab; setTab: (t: Tab) => void }) {
  const errors = useValidation((s) => s.errors);
  const warnings = useValidation((s) => s.warnings);
  const workflowId = useEditor((s) => s.workflowId);
  const tabs: Array<[Tab, string]> = [
    ['inspect', 'Inspector'],
    ['problems', `Problems${errors + warnings ? ` (${errors + warnings})` : ''}`],
    ['runs', 'Runs'],
    ['workflow', 'Workflow'],
  ];
  return (
    <aside className="side side--right" aria-label="Details">
      <div className="tabs" role="tablist" aria-label="Panels">
        {tabs.map(([id, label]) => (
          <button
            key={id}
            role="tab"
            id={`tab-${id}`}
            aria-selected={tab === id}
            aria-controls={`tabpanel-${id}`}
            className={`tab${tab === id ? ' is-active' : ''}${id === 'problems' && errors ? ' has-error' : ''}`}
            onClick={() => setTab(id)}
            data-testid={`tab-${id}`}
          >
            {label}
          </button>
        ))}
      </div>
      <div className="tabpanel" role="tabpanel" id={`tabpanel-${tab}`} aria-labelledby={`tab-${tab}`}>
        {tab === 'inspect' && <Inspector />}
        {tab === 'problems' && <ProblemsPanel />}
        {tab === 'runs' && <RunHistory workflowId={workflowId} />}
        {tab === 'workflow' && <WorkflowPanel />}
      </div>
    </aside>
  );
}

function EditorBody({ id }: { id: string | null }) {
  const [snap, setSnap] = useState(true);
  const [tab, setTab] = useState<Tab>('inspect');
  const [importReport, setImportReport] = useState<ImportReport | null>(null);
  const loading = useEditor((s) => s.loading);
  const loadError = useEditor((s) => s.loadError);
  const panels = usePanels((s) => s.open);
  const workflowId = useEditor((s) => s.workflowId);
  const yamlView = useYamlFile((s) => s.view);
  const editable = useYamlFile((s) => s.editable);
  const showText = useEditor((s) => s.kind === 'yaml' && !s.loading && s.workflowId !== null) && yamlView !== 'canvas' && !loadError;
  // The report is about the graph it was made for.
  useEffect(() => setImportReport(null), [workflowId, id]);

  useEffect(() => {
    const s = useEditor.getState();
    if (id === null) {
      // Keep an unsaved new workflow when coming back to it.
      if (s.workflowId !== null || s.loadError) newWorkflow();
    } else if (s.workflowId !== id || s.loadError) {
      void openWorkflow(id);
    }
  }, [id]);

  const activate = useCallback(() => setTab('inspect'), []);
  return (
    <div className="editor">
      <Toolbar snap={snap} setSnap={setSnap} onImported={setImportReport} />
      <ConflictBanner />
      <YamlConflictView />
      <ImportReportBanner report={importReport} onClose={() => setImportReport(null)} />
      <div className="editor__main">
        {panels.left && (
          <aside className="side side--left" aria-label="Workflows and palette" data-testid="left-panel">
            <Palette />
            <WorkflowList />
          </aside>
        )}
        <main className={`editor__canvas${showText ? ` editor__canvas--${yamlView}` : ''}`} aria-busy={loading}>
          {showText && (
            <div className="yaml-pane" data-testid="yaml-pane">
              <Suspense fallback={<div className="loading-veil">Loading the text editor…</div>}>
                <YamlTextEditor key={`${workflowId}:${editable}`} />
              </Suspense>
            </div>
          )}
          {loadError ? (
            <div className="center-msg" role="alert" data-testid="load-error">
              <h2>Could not open this workflow</h2>
              <p>{loadError}</p>
              <button className="btn" onClick={() => id && void openWorkflow(id)}>
                Try again
              </button>
            </div>
          ) : (
            (!showText || yamlView === 'split') && (
              <div className="canvas-pane">
                <EditorCanvas snap={snap} onNodeActivate={activate} />
              </div>
            )
          )}
          <StarterHint />
          {loading && <div className="loading-veil">Loading…</div>}
        </main>
        {panels.right && <SidePanel tab={tab} setTab={setTab} />}
        <div className="panel-toggle--right">
          <PanelToggle side="right" />
        </div>
      </div>
      <TemplateGallery />
      <YamlCreateDialog />
    </div>
  );
}

export function EditorPage({ id }: { id: string | null }) {
  return (
    <ReactFlowProvider>
      <EditorBody id={id} />
    </ReactFlowProvider>
  );
}
