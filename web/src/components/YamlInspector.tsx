// The inspector of a YAML step: its main field and settings, each written
// to the file when the field is left (one undo step per write), or the
// read-only text of a step the server does not let the editor change.
import { useCallback, useEffect, useRef, useState } from 'react';
import { errorMessage } from '../api/client';
import { YAML_KINDS, type YamlEdit } from '../api/types';
import { mainField, settingsEdits, settingsFor, settingsText, TRIGGER_RULES, yamlEdits } from '../editor/yaml';
import { isIncluded } from '../graph/groups';
import { str, type FlowNode } from '../graph/types';
import { useApp } from '../store/app';
import { useEditor } from '../store/editor';
import { useYamlFile } from '../store/yamlFile';

/** The step's main text as the file has it (the projection prefixes command and script texts). */
function mainText(node: FlowNode): string {
  const kind = String(node.data.kind ?? '');
  const raw = typeof node.data.text === 'string' && node.data.text ? node.data.text : String(node.data.detail ?? '');
  if (kind === 'command') return raw.replace(/^command: /, '');
  if (kind === 'script') return raw.replace(/^(bun|uv|script): /, '');
  return raw;
}

/** Where a field edit stands: nothing pending, typed but not written, being written. */
function FieldState({ pending, writing, error }: { pending: boolean; writing: boolean; error: string | null }) {
  return (
    <span className={`field__state${error ? ' is-error' : pending ? ' is-pending' : ''}`} role="status">
      {error ? `Not written: ${error}` : writing ? 'Writing to the file…' : pending ? '● Not in the file yet: leave the field or press Enter' : ''}
    </span>
  );
}

/** Writes one field edit; a second commit of the same value while the first is in flight is dropped. */
function useFieldWriter(what: string) {
  const [writing, setWriting] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const inflight = useRef<string | null>(null);
  const write = useCallback(
    async (key: string, edits: () => YamlEdit[], label: string) => {
      if (inflight.current === key) return;
      inflight.current = key;
      setWriting(true);
      setError(null);
      try {
        const list = edits();
        if (list.length) await useYamlFile.getState().applyEdits(list, { label });
      } catch (e) {
        setError(errorMessage(e));
        useApp.getState().toast(`Could not change ${what}: ${errorMessage(e)}`, 'error');
      } finally {
        inflight.current = null;
        setWriting(false);
      }
    },
    [what],
  );
  return { writing, error, write };
}

/**
 * An editable YAML step's main field (prompt, bash, …): written to the file
 * (one `set` edit, one undo step) when the field is left or on Ctrl+Enter;
 * Escape puts back what the file says.
 */
function YamlMainField({ node }: { node: FlowNode }) {
  const kind = String(node.data.kind ?? '');
  const initial = mainText(node);
  const [value, setValue] = useState(initial);
  useEffect(() => setValue(initial), [initial]);
  const field = mainField(kind);
  const { writing, error, write } = useFieldWriter(field);
  const commit = () => {
    if (value === initial) return;
    void write(`${node.id}\u0000${value}`, () => [yamlEdits.setMain(node.id, kind, value)], `Change ${field} of ${node.id}`);
  };
  return (
    <div className="field">
      <label className="field__label" htmlFor={`yaml-main-${node.id}`}>
        <code>{field}</code>
      </label>
      <textarea
        id={`yaml-main-${node.id}`}
        className="yaml-main"
        rows={5}
        value={value}
        onChange={(e) => setValue(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            commit();
          } else if (e.key === 'Escape') {
            setValue(initial);
          }
        }}
        aria-describedby={`yaml-main-${node.id}-state`}
        data-testid="inspector-yaml-main"
      />
      <div className="field__row" id={`yaml-main-${node.id}-state`}>
        <FieldState pending={value !== initial && !writing} writing={writing} error={error} />
        {value === initial && !writing && !error && <span className="field__hint">Written to the file when you leave the field (Ctrl+Enter); Esc puts it back.</span>}
      </div>
    </div>
  );
}

/**
 * The step's other settings (when, trigger_rule, retry, timeout, loop,
 * on_reject): each field is written when it is left (Enter too; a choice at
 * once) as `set` edits of that field only; an emptied field is removed.
 */
function YamlSettings({ node }: { node: FlowNode }) {
  const kind = String(node.data.kind ?? '');
  const data = node.data as Record<string, unknown>;
  const initial = settingsText(data);
  const key = JSON.stringify(initial);
  const [values, setValues] = useState(initial);
  const shown = useRef(initial);
  // The file changed (a write came back, an undo): fields not being edited
  // show the file's value; a field typed in and not written yet keeps its text.
  useEffect(() => {
    const before = shown.current;
    shown.current = initial;
    setValues((v) => Object.fromEntries(Object.keys(initial).map((f) => [f, (v[f] ?? '') === (before[f] ?? '') ? initial[f] : v[f]])) as Record<string, string>);
  }, [key]);
  const fields = settingsFor(kind);
  const { writing, error, write } = useFieldWriter('the settings');
  const pending = fields.some((f) => (values[f.field] ?? '').trim() !== (initial[f.field] ?? '').trim());
  const commit = (field: string, v: string = values[field] ?? '') => {
    if (v.trim() === (initial[field] ?? '').trim()) return;
    void write(
      `${node.id}\u0000${field}\u0000${v}`,
      () => settingsEdits(node.id, kind, initial, { ...initial, [field]: v }),
      v.trim() ? `Change ${field} of ${node.id}` : `Remove ${field} of ${node.id}`,
    );
  };
  return (
    <fieldset className="yaml-settings" data-testid="inspector-yaml-settings">
      <legend>Settings</legend>
      {fields.map((f) => {
        const id = `yaml-set-${node.id}-${f.field}`;
        const value = values[f.field] ?? '';
        const set = (v: string) => setValues({ ...values, [f.field]: v });
        return (
          <div className="field field--compact" key={f.field}>
            <label className="field__label" htmlFor={id}>
              <code>{f.label}</code>
            </label>
            {f.type === 'rule' ? (
              <select
                id={id}
                value={value}
                onChange={(e) => {
                  set(e.target.value);
                  commit(f.field, e.target.value);
                }}
                data-testid={`inspector-yaml-${f.field}`}
              >
                <option value="">all_success (default)</option>
                {TRIGGER_RULES.filter((r) => r !== 'all_success').map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
            ) : (
              <input
                id={id}
                type="text"
                inputMode={f.type === 'number' ? 'numeric' : undefined}
                value={value}
                onChange={(e) => set(e.target.value)}
                onBlur={() => commit(f.field)}
                onKeyDown={(e) => {
                  if (e.key === 'Enter') commit(f.field);
                  else if (e.key === 'Escape') set(initial[f.field] ?? '');
                }}
                title={f.hint}
                data-testid={`inspector-yaml-${f.field}`}
              />
            )}
          </div>
        );
      })}
      <div className="field__row">
        <FieldState pending={pending && !writing} writing={writing} error={error} />
        {!pending && !writing && !error && (
          <span className="field__hint">Each field is written to the file when you leave it; an emptied field is removed.</span>
        )}
      </div>
    </fieldset>
  );
}

export function GenericFields({ node }: { node: FlowNode }) {
  // The whole prompt/script (data.text); data.detail is the canvas' 80-character cut.
  const text = typeof node.data.text === 'string' && node.data.text ? node.data.text : node.data.detail;
  const rest = Object.fromEntries(Object.entries(node.data).filter(([k]) => k !== 'text' && k !== 'detail'));
  const editable = useEditor((s) => s.kind === 'yaml') && useYamlFile((s) => s.editable);
  const kind = String(node.data.kind ?? '');
  const included = isIncluded(node);
  return (
    <div className="field">
      {included && (
        <div className="banner banner--warning inspector-included" data-testid="inspector-included">
          From the included workflow <b>{str(node.data.groupLabel) || str(node.data.group)}</b> (include step{' '}
          <code>{str(node.data.group)}</code>): read-only here; edit the included file.
        </div>
      )}
      {editable && !included && (YAML_KINDS as readonly string[]).includes(kind) ? (
        <>
          <YamlMainField key={node.id} node={node} />
          <YamlSettings key={`${node.id}-settings`} node={node} />
        </>
      ) : (
        <>
          <div className="field__hint">Read-only step of a YAML workflow.</div>
          {typeof text === 'string' && text && (
            <pre className="code-block" aria-label="Step text" data-testid="inspector-yaml-text">
              {text}
            </pre>
          )}
        </>
      )}
      <pre className="code-block">{JSON.stringify(rest, null, 2)}</pre>
    </div>
  );
}

