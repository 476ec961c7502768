import { useEffect, useState } from 'react';
import { create } from 'zustand';
import { api, errorMessage } from '../api/client';
import type { Problem, YamlConversion } from '../api/types';
import { useApp } from '../store/app';
import { useYamlFile } from '../store/yamlFile';
import { navigate, workflowPath } from '../store/router';
import { mayDiscardDraft } from './TemplateGallery';
import { starterYaml, yamlFileName } from '../editor/yaml';

type CreateState = {
  open: boolean;
  /** A conversion of a drawn workflow, or a new file from the starter text. */
  from: 'new' | 'convert';
  path: string;
  source: string;
  unconverted: YamlConversion['unconverted'];
  problems: Problem[];
};

const useYamlCreate = create<CreateState>(() => ({ open: false, from: 'new', path: '', source: '', unconverted: [], problems: [] }));

export function openNewYaml(): void {
  useYamlCreate.setState({ open: true, from: 'new', path: 'new-workflow.yaml', source: '', unconverted: [], problems: [] });
}

/** Converts the open drawn workflow (as saved) and shows the text before any file is written. */
export async function openConvertToYaml(id: string): Promise<void> {
  try {
    const c = await api.convertToYaml(id);
    useYamlCreate.setState({ open: true, from: 'convert', path: c.path, source: c.source, unconverted: c.unconverted ?? [], problems: c.problems ?? [] });
  } catch (e) {
    useApp.getState().toast(`Could not convert: ${errorMessage(e)}`, 'error');
  }
}

export function YamlCreateDialog() {
  const s = useYamlCreate();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!s.open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        setError(null);
        useYamlCreate.setState({ open: false });
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [s.open]);
  if (!s.open) return null;
  const close = () => {
    setError(null);
    useYamlCreate.setState({ open: false });
  };
  const submit = async () => {
    const path = yamlFileName(s.path);
    if (s.from === 'new' && !mayDiscardDraft(`open the new file ${path}`)) return;
    setBusy(true);
    setError(null);
    try {
      const w = await api.createYaml(path, s.from === 'new' ? starterYaml(path) : s.source);
      useYamlCreate.setState({ open: false });
      useApp.getState().toast(`Created ${path} in the workflows folder`, 'success');
      void useApp.getState().loadWorkflows();
      useYamlFile.getState().setView('split');
      navigate(workflowPath(w.id));
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  const title = s.from === 'new' ? 'New YAML workflow' : 'Convert to YAML';
  return (
    <div className="modal-backdrop" role="presentation">
      <div className="modal yaml-create" role="dialog" aria-modal="true" aria-labelledby="yaml-create-title" data-testid="yaml-create">
        <h2 id="yaml-create-title">{title}</h2>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <div className="field">
            <label htmlFor="yaml-create-path">File name in the server’s workflows folder</label>
            <input
              id="yaml-create-path"
              value={s.path}
              autoFocus
              onChange={(e) => useYamlCreate.setState({ path: e.target.value })}
              data-testid="yaml-create-path"
            />
          </div>
          {s.from === 'convert' && (
            <>
              {s.unconverted.length > 0 ? (
                <div className="banner banner--warning" data-testid="yaml-create-unconverted">
                  <div className="banner__msg">
                    <strong>Not converted:</strong>
                    <ul>
                      {s.unconverted.map((u, i) => (
                        <li key={i}>
                          {u.node ? <code>{u.node}</code> : 'the workflow'}: {u.reason}
                        </li>
                      ))}
                    </ul>
                  </div>
                </div>
              ) : (
                <p className="sy-muted small">Every node converts.</p>
              )}
              <pre className="code-block yaml-create__source" aria-label="YAML text" data-testid="yaml-create-source">
                {s.source}
              </pre>
            </>
          )}
          {error && (
            <p className="problem problem--error" role="alert" data-testid="yaml-create-error">
              {error}
            </p>
          )}
          <div className="modal__actions">
            <button type="button" className="btn" onClick={close}>
              Cancel
            </button>
            <button type="submit" className="btn btn--primary" disabled={busy || !s.path.trim()} data-testid="yaml-create-submit">
              {busy ? 'Creating…' : 'Create file'}
            </button>
          </div>
        </form>
      </div>
    </div>
  );
}
