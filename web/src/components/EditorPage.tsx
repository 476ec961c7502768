import { ReactFlowProvider } from '@xyflow/react';
import { lazy, Suspense, useCallback, useEffect, useState } from 'react';
import { errorMessage } from '../api/client';
import { useApp } from '../store/app';
import { isDirty, useEditor } from '../store/editor';
import { newWorkflow, openWorkflow } from '../store/editing';
import { useYamlFile } from '../store/yamlFile';
import { useCannotRun, useValidation } from '../store/validation';
import { usePanels } from '../store/panels';
import { EditorCanvas } from './Canvas';
import { Toolbar, type ImportReport } from './EditorToolbar';
import { Inspector } from './Inspector';
import { Palette } from './Palette';
import { openGallery, TemplateGallery } from './TemplateGallery';
import { ProblemsPanel } from './ProblemsPanel';
import { RunHistory } from './RunHistory';
import { WorkflowList } from './WorkflowList';
import { WorkflowPanel } from './WorkflowPanel';
import { YamlCreateDialog } from './YamlCreate';
import { DiskChangeBanner, useDiskWatch, YamlConflictView } from './YamlMerge';
import { PanelToggle } from './PanelToggle';

type Tab = 'inspect' | 'problems' | 'runs' | 'workflow';

const YamlTextEditor = lazy(() => import('./YamlTextEditor').then((m) => ({ default: m.YamlTextEditor })));

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

function SidePanel({ tab, setTab }: { tab: Tab; setTab: (t: Tab) => void }) {
  const cannotRun = useCannotRun() ? 1 : 0;
  const errors = useValidation((s) => s.errors) + cannotRun;
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

  useDiskWatch();
  const showProblems = useCallback(() => {
    usePanels.getState().set('right', true);
    setTab('problems');
  }, []);
  const activate = useCallback(() => setTab('inspect'), []);
  return (
    <div className="editor">
      <Toolbar snap={snap} setSnap={setSnap} onImported={setImportReport} onShowProblems={showProblems} />
      <ConflictBanner />
      <YamlConflictView />
      <DiskChangeBanner />
      <ImportReportBanner report={importReport} onClose={() => setImportReport(null)} />
      <div className="editor__main">
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
        {/* After the canvas in the page (Tab reaches the canvas first), drawn on its left (order: -1). */}
        {panels.left && (
          <aside className="side side--left" aria-label="Workflows and palette" data-testid="left-panel">
            <Palette />
            <WorkflowList />
          </aside>
        )}
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
