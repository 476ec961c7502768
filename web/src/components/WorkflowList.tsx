import { useEffect } from 'react';
import { useApp } from '../store/app';
import { useEditor } from '../store/editor';
import { navigate, useRouter, workflowPath } from '../store/router';
import { openGallery, startNewWorkflow } from './TemplateGallery';
import { openNewYaml } from './YamlCreate';

export function WorkflowList() {
  const workflows = useApp((s) => s.workflows);
  const error = useApp((s) => s.workflowsError);
  const load = useApp((s) => s.loadWorkflows);
  const route = useRouter((s) => s.route);
  const currentId = route.name === 'editor' ? route.id : null;
  const editorId = useEditor((s) => s.workflowId);
  useEffect(() => {
    void load();
  }, [load, editorId]);
  return (
    <section className="wf-list" aria-labelledby="wf-title">
      <div className="side-head">
        <h2 id="wf-title" className="side-title">
          Workflows
        </h2>
        <span className="side-head__actions">
          <button className="btn btn--small" onClick={openGallery} title="Start from an example workflow" data-testid="open-templates">
            Templates
          </button>
          <button className="btn btn--small" onClick={startNewWorkflow} title="A new workflow with a start and an agent node" data-testid="new-workflow">
            + New
          </button>
          <button className="btn btn--small" onClick={openNewYaml} title="A new YAML workflow file in the server's workflows folder" data-testid="new-yaml">
            + New YAML
          </button>
        </span>
      </div>
      {error && !workflows && <p className="sy-muted small">Could not load workflows.</p>}
      {workflows && workflows.length === 0 && <p className="sy-muted small">No saved workflows yet.</p>}
      {workflows && (
        <ul className="wf-list__items" data-testid="workflow-list">
          {workflows.map((w) => (
            <li key={w.id}>
              <a
                href={workflowPath(w.id)}
                className={`wf-item${w.id === currentId ? ' is-current' : ''}`}
                aria-current={w.id === currentId ? 'page' : undefined}
                onClick={(e) => {
                  e.preventDefault();
                  navigate(workflowPath(w.id));
                }}
                data-testid={`workflow-item-${w.id}`}
              >
                <span className="wf-item__name">{w.name || '(unnamed)'}</span>
                <span className={`kind kind--${w.kind}`}>{w.kind}</span>
                {w.description && <span className="wf-item__desc">{w.description}</span>}
              </a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
