import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { groupWorkflows, matchesWorkflow } from '../editor/find';
import { useApp } from '../store/app';
import { useEditor } from '../store/editor';
import { navigate, useRouter, workflowPath } from '../store/router';
import { openGallery, startNewWorkflow } from './TemplateGallery';
import { openNewYaml } from './YamlCreate';

/** Arrow keys move between the list's links; the list is one Tab stop. */
function onListKeys(e: KeyboardEvent<HTMLElement>) {
  const links = [...e.currentTarget.querySelectorAll<HTMLAnchorElement>('a.wf-item')];
  const at = links.indexOf(document.activeElement as HTMLAnchorElement);
  let next = -1;
  if (e.key === 'ArrowDown') next = Math.min(links.length - 1, at + 1);
  else if (e.key === 'ArrowUp') next = Math.max(0, at - 1);
  else if (e.key === 'Home') next = 0;
  else if (e.key === 'End') next = links.length - 1;
  if (next < 0 || !links[next]) return;
  e.preventDefault();
  for (const l of links) l.tabIndex = -1;
  links[next]!.tabIndex = 0;
  links[next]!.focus();
}

/**
 * The workflows, searchable (name, folder, description, tags; `#tag` for a
 * tag), in groups: drawn ones, then YAML files by folder. One Tab stop;
 * arrow keys move inside.
 */
export function WorkflowList() {
  const workflows = useApp((s) => s.workflows);
  const tags = useApp((s) => s.workflowTags);
  const error = useApp((s) => s.workflowsError);
  const load = useApp((s) => s.loadWorkflows);
  const route = useRouter((s) => s.route);
  const currentId = route.name === 'editor' ? route.id : null;
  const editorId = useEditor((s) => s.workflowId);
  const [query, setQuery] = useState('');
  const [closed, setClosed] = useState<Record<string, boolean>>({});
  const listRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    void load();
  }, [load, editorId]);
  const shown = useMemo(
    () => (workflows ?? []).filter((w) => matchesWorkflow(w, tags[w.id]?.tags ?? [], query)),
    [workflows, tags, query],
  );
  const groups = useMemo(() => groupWorkflows(shown), [shown]);
  const focusId = shown.some((w) => w.id === currentId) ? currentId : (groups[0]?.items[0]?.id ?? null);
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
      {workflows && workflows.length > 0 && (
        <input
          type="search"
          className="wf-search"
          value={query}
          placeholder="Search: name, folder, #tag"
          aria-label="Search workflows by name, folder, description or #tag"
          onFocus={() => void useApp.getState().loadTags()}
          onChange={(e) => setQuery(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'ArrowDown') {
              e.preventDefault();
              listRef.current?.querySelector<HTMLAnchorElement>('a.wf-item')?.focus();
            } else if (e.key === 'Escape') setQuery('');
          }}
          data-testid="workflow-search"
        />
      )}
      {error && !workflows && <p className="sy-muted small">Could not load workflows.</p>}
      {workflows && workflows.length === 0 && <p className="sy-muted small">No saved workflows yet.</p>}
      {workflows && workflows.length > 0 && shown.length === 0 && (
        <p className="sy-muted small" data-testid="workflow-search-empty">
          No workflow matches “{query}”.
        </p>
      )}
      {workflows && (
        <div className="wf-list__groups" ref={listRef} onKeyDown={onListKeys} data-testid="workflow-list">
          {groups.map((g) => {
            const isClosed = !!closed[g.key] && !query;
            return (
              <div key={g.key} className="wf-group" data-testid={`workflow-group-${g.key}`}>
                <button
                  className="wf-group__head"
                  aria-expanded={!isClosed}
                  tabIndex={-1}
                  onClick={() => setClosed({ ...closed, [g.key]: !closed[g.key] })}
                  title={isClosed ? 'Show' : 'Hide'}
                >
                  <span aria-hidden="true">{isClosed ? '▸' : '▾'}</span> {g.label} <span className="sy-muted">({g.items.length})</span>
                </button>
                {!isClosed && (
                  <ul className="wf-list__items">
                    {g.items.map((w) => (
                      <li key={w.id}>
                        <a
                          href={workflowPath(w.id)}
                          className={`wf-item${w.id === currentId ? ' is-current' : ''}`}
                          aria-current={w.id === currentId ? 'page' : undefined}
                          tabIndex={w.id === focusId ? 0 : -1}
                          title={[w.name, w.path].filter(Boolean).join('\n')}
                          onClick={(e) => {
                            e.preventDefault();
                            navigate(workflowPath(w.id));
                          }}
                          data-testid={`workflow-item-${w.id}`}
                        >
                          <span className="wf-item__name">{w.name || '(unnamed)'}</span>
                          <span className={`kind kind--${w.kind}`}>{w.kind}</span>
                          {w.description && <span className="wf-item__desc">{w.description}</span>}
                          {(tags[w.id]?.tags.length ?? 0) > 0 && (
                            <span className="wf-item__tags">
                              {tags[w.id]!.tags.map((t) => (
                                <span key={t} className="wf-tag">
                                  #{t}
                                </span>
                              ))}
                            </span>
                          )}
                        </a>
                      </li>
                    ))}
                  </ul>
                )}
              </div>
            );
          })}
        </div>
      )}
    </section>
  );
}
