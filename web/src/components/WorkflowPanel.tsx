import { useEffect, useState } from 'react';
import { api, errorMessage } from '../api/client';
import type { WorkflowVersion } from '../api/types';
import { useApp } from '../store/app';
import { openConvertToYaml } from './YamlCreate';
import { useEditor } from '../store/editor';
import { newWorkflow } from '../store/editing';
import { navigate } from '../store/router';
import { fmtTime } from './format';

function Versions({ workflowId, current }: { workflowId: string; current: number | null }) {
  const [versions, setVersions] = useState<WorkflowVersion[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const toast = useApp((s) => s.toast);
  useEffect(() => {
    let live = true;
    api.listVersions(workflowId).then(
      (v) => live && setVersions(Array.isArray(v) ? [...v].sort((a, b) => b.version - a.version) : []),
      (e: unknown) => live && setError(errorMessage(e)),
    );
    return () => {
      live = false;
    };
  }, [workflowId, current]);
  const restore = async (v: number) => {
    try {
      const ver = await api.getVersion(workflowId, v);
      if (!ver.graph) throw new Error('that version has no graph');
      useEditor.getState().replaceGraph(ver.graph);
      toast(`Loaded version ${v} into the editor. Save to make it the newest version.`, 'info');
    } catch (e) {
      toast(`Could not load version ${v}: ${errorMessage(e)}`, 'error');
    }
  };
  if (error) return <p className="sy-muted small">Could not load versions: {error}</p>;
  if (!versions) return <p className="sy-muted small">Loading versions…</p>;
  return (
    <ul className="versions" data-testid="versions">
      {versions.map((v) => (
        <li key={v.version} className="versions__item">
          <span>
            v{v.version}
            {v.version === current && <span className="sy-muted"> (loaded)</span>}
          </span>
          <span className="sy-muted small">{fmtTime(v.createdAt)}</span>
          {v.version !== current && (
            <button className="btn btn--small" onClick={() => void restore(v.version)} data-testid={`version-load-${v.version}`}>
              Load
            </button>
          )}
        </li>
      ))}
    </ul>
  );
}

export function WorkflowPanel() {
  const name = useEditor((s) => s.name);
  const description = useEditor((s) => s.description);
  const id = useEditor((s) => s.workflowId);
  const version = useEditor((s) => s.version);
  const kind = useEditor((s) => s.kind);
  const setMeta = useEditor((s) => s.setMeta);
  const toast = useApp((s) => s.toast);
  const del = async () => {
    if (!id || !confirm(`Delete workflow “${name}”? Its runs stay in the history.`)) return;
    try {
      await api.deleteWorkflow(id);
      toast('Workflow deleted', 'success');
      newWorkflow();
      navigate('/workflows/new', { force: true });
      void useApp.getState().loadWorkflows();
    } catch (e) {
      toast(`Delete failed: ${errorMessage(e)}`, 'error');
    }
  };
  return (
    <div className="wf-panel">
      <div className="field">
        <label htmlFor="wf-desc">Description</label>
        <textarea
          id="wf-desc"
          rows={3}
          value={description}
          readOnly={kind === 'yaml'}
          onChange={(e) => setMeta({ description: e.target.value })}
          data-testid="workflow-description"
        />
      </div>
      <p className="sy-muted small">
        {id ? (
          <>
            id <code>{id}</code> · {kind} · version {version ?? '—'}
          </>
        ) : (
          'Not saved yet.'
        )}
      </p>
      {id && kind === 'graph' && (
        <>
          <h3 className="side-title">Versions</h3>
          <Versions workflowId={id} current={version} />
        </>
      )}
      {id && kind === 'yaml' && (
        <p className="sy-muted small" data-testid="workflow-yaml-note">
          A YAML workflow is a file in the server’s workflows folder: to remove it, delete the file.
        </p>
      )}
      {id && kind === 'graph' && (
        <p>
          <button
            className="btn btn--small"
            onClick={() => void openConvertToYaml(id)}
            title="Show this workflow (as saved) as YAML, then create the file in the server's workflows folder"
            data-testid="convert-to-yaml"
          >
            Convert to YAML…
          </button>
        </p>
      )}
      {id && kind === 'graph' && (
        <button className="btn btn--danger btn--small" onClick={() => void del()} data-testid="workflow-delete">
          Delete workflow
        </button>
      )}
      {/* name is edited in the toolbar; kept here for screen-reader context */}
      <span className="sr-only">Workflow {name}</span>
    </div>
  );
}
