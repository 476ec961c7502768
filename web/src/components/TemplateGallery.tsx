import { useEffect, useRef, useState } from 'react';
import { create } from 'zustand';
import { TEMPLATES, type Template } from '../graph/templates';
import { useApp } from '../store/app';
import { useEditor } from '../store/editor';
import { hasUnsavedChanges, newWorkflow } from '../store/editing';
import { navigate, workflowPath } from '../store/router';
import { api, errorMessage } from '../api/client';

export const useGallery = create<{ open: boolean }>(() => ({ open: false }));
export const openGallery = () => useGallery.setState({ open: true });
const closeGallery = () => useGallery.setState({ open: false });

/** True when the open graph may be replaced: nothing unsaved, or the user agreed to lose it. */
export function mayDiscardDraft(action: string): boolean {
  if (!hasUnsavedChanges()) return true;
  return confirm(`“${useEditor.getState().name}” has unsaved changes. Discard them and ${action}?`);
}

/** "+ New": a fresh starter, also from an unsaved draft (after asking). */
export function startNewWorkflow(): void {
  if (!mayDiscardDraft('start a new workflow')) return;
  newWorkflow();
  navigate('/workflows/new', { force: true });
}

function openTemplate(t: Template): void {
  if (t.kind !== 'graph') return;
  if (!mayDiscardDraft(`open the template “${t.name}”`)) return;
  newWorkflow({ graph: t.graph, name: t.name, description: t.description, unsaved: true });
  navigate('/workflows/new', { force: true });
  closeGallery();
}

const TYPE_LABEL: Record<string, string> = { start: 'start', agent: 'agent', if: 'if', approval: 'approval' };

function Summary({ t }: { t: Template }) {
  if (t.kind === 'yaml')
    return (
      <span className="tpl-card__meta">
        <span className="tpl-chip tpl-chip--yaml">YAML file</span>
      </span>
    );
  const counts = new Map<string, number>();
  for (const n of t.graph.nodes) counts.set(n.type, (counts.get(n.type) ?? 0) + 1);
  const subs = t.graph.edges.filter((e) => e.sourceHandle === 'subagent').length;
  return (
    <span className="tpl-card__meta">
      {[...counts].map(([type, c]) => (
        <span key={type} className={`tpl-chip tpl-chip--${type}`}>
          {c} {TYPE_LABEL[type] ?? type}
        </span>
      ))}
      {subs > 0 && <span className="tpl-chip tpl-chip--subagent">{subs} subagent edges</span>}
    </span>
  );
}

function YamlCard({ t }: { t: Extract<Template, { kind: 'yaml' }> }) {
  const [copied, setCopied] = useState(false);
  const pre = useRef<HTMLPreElement>(null);
  const toast = useApp((s) => s.toast);
  const [creating, setCreating] = useState(false);
  const create = async () => {
    if (!mayDiscardDraft(`create ${t.fileName}`)) return;
    setCreating(true);
    try {
      const w = await api.createYaml(t.fileName, t.yaml);
      toast(`Created ${t.fileName} in the workflows folder`, 'success');
      void useApp.getState().loadWorkflows();
      closeGallery();
      navigate(workflowPath(w.id));
    } catch (e) {
      toast(`Could not create ${t.fileName}: ${errorMessage(e)}`, 'error');
    } finally {
      setCreating(false);
    }
  };
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(t.yaml);
      setCopied(true);
    } catch {
      // No clipboard access: select the text so Ctrl+C copies it.
      const sel = getSelection();
      if (pre.current && sel) {
        sel.selectAllChildren(pre.current);
        toast('Press Ctrl+C to copy the selected YAML.', 'info');
      }
    }
  };
  return (
    <>
      <p className="tpl-card__how">
        <b>Create the file</b> puts it in the server’s workflows folder as <code>{t.fileName}</code> and opens it here, to edit
        on the canvas or as text. Or copy the text into your repository’s workflows folder (<code>switchyard serve --workflows DIR</code>;
        default <code>.switchyard/workflows</code>).
      </p>
      <pre ref={pre} className="code-block tpl-card__yaml" data-testid={`template-yaml-${t.id}`} tabIndex={0}>
        {t.yaml}
      </pre>
      <span className="tpl-card__buttons">
        <button className="btn btn--small btn--primary" disabled={creating} onClick={() => void create()} data-testid={`template-create-${t.id}`}>
          {creating ? 'Creating…' : 'Create the file'}
        </button>
        <button className="btn btn--small" onClick={() => void copy()} data-testid={`template-copy-${t.id}`}>
          {copied ? 'Copied' : 'Copy YAML'}
        </button>
      </span>
    </>
  );
}

export function TemplateGallery() {
  const open = useGallery((s) => s.open);
  const dialog = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const prev = document.activeElement as HTMLElement | null;
    dialog.current?.querySelector<HTMLElement>('button')?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') closeGallery();
    };
    window.addEventListener('keydown', onKey);
    return () => {
      window.removeEventListener('keydown', onKey);
      prev?.focus?.();
    };
  }, [open]);
  if (!open) return null;
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && closeGallery()}>
      <div
        ref={dialog}
        className="modal tpl-gallery"
        role="dialog"
        aria-modal="true"
        aria-labelledby="tpl-title"
        data-testid="template-gallery"
      >
        <div className="modal__head">
          <h2 id="tpl-title">Start from a template</h2>
          <button className="icon-btn" onClick={closeGallery} aria-label="Close templates" data-testid="template-gallery-close">
            ×
          </button>
        </div>
        <p className="sy-muted small">
          A template opens as a new, unsaved workflow. Your saved workflows are not changed.
        </p>
        <ul className="tpl-grid">
          {TEMPLATES.map((t) => (
            <li key={t.id} className={`tpl-card tpl-card--${t.kind}`} data-testid={`template-${t.id}`}>
              <h3 className="tpl-card__name">{t.name}</h3>
              <Summary t={t} />
              <p className="tpl-card__desc">{t.description}</p>
              {t.kind === 'graph' ? (
                <button className="btn btn--primary btn--small tpl-card__use" onClick={() => openTemplate(t)} data-testid={`template-use-${t.id}`}>
                  Use this template
                </button>
              ) : (
                <YamlCard t={t} />
              )}
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}
