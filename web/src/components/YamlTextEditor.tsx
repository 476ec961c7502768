import { autocompletion, completionKeymap, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { yaml } from '@codemirror/lang-yaml';
import { HighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { lintGutter, setDiagnostics } from '@codemirror/lint';
import { EditorState } from '@codemirror/state';
import { drawSelection, EditorView, highlightActiveLine, highlightSpecialChars, keymap, lineNumbers } from '@codemirror/view';
import { tags as t } from '@lezer/highlight';
import { useEffect, useRef } from 'react';
import { problemsToDiagnostics, yamlCompletions } from '../editor/yaml';
import { promptTheme } from '../editor/prompt';
import { useYamlFile } from '../store/yamlFile';
import { useValidation } from '../store/validation';

const yamlHighlight = HighlightStyle.define([
  { tag: [t.definition(t.propertyName), t.propertyName], color: 'var(--node-agent)' },
  { tag: [t.string, t.special(t.string)], color: 'var(--node-start)' },
  { tag: [t.number, t.bool, t.null, t.atom], color: 'var(--node-if)' },
  { tag: t.comment, color: 'var(--muted)', fontStyle: 'italic' },
  { tag: [t.keyword, t.meta, t.labelName, t.typeName], color: 'var(--node-approval)' },
  { tag: [t.punctuation, t.separator, t.squareBracket, t.brace], color: 'var(--muted)' },
]);

const editorTheme = EditorView.theme({
  '&': { height: '100%', borderRadius: '0', border: 'none' },
  '.cm-gutters': { backgroundColor: 'var(--panel-2)', color: 'var(--muted)', borderRight: '1px solid var(--border)' },
  '.cm-activeLine': { backgroundColor: 'color-mix(in srgb, var(--accent) 6%, transparent)' },
  '.cm-diagnostic': { padding: '3px 8px', fontSize: '12px' },
  '.cm-diagnostic-error': { borderLeft: '4px solid var(--danger)' },
  '.cm-diagnostic-warning': { borderLeft: '4px solid var(--warning)' },
  '.cm-lintRange-error': { backgroundImage: 'none', textDecoration: 'underline wavy var(--danger)', textUnderlineOffset: '3px' },
  '.cm-lintRange-warning': { backgroundImage: 'none', textDecoration: 'underline wavy var(--warning)', textUnderlineOffset: '3px' },
});

function complete(ctx: CompletionContext): CompletionResult | null {
  const r = yamlCompletions(ctx.state.doc.toString(), ctx.pos);
  if (!r || (r.from === ctx.pos && !ctx.explicit && r.options.length === 0)) return null;
  if (r.from === ctx.pos && !ctx.explicit) {
    // Only open by itself after a $, a `- ` in depends_on or a `[`/`, `.
    const before = ctx.state.sliceDoc(Math.max(0, ctx.pos - 2), ctx.pos);
    if (!/(\$|\[|, |- )$/.test(before)) return null;
  }
  return { from: r.from, options: r.options, validFor: /^[\w$.-]*$/ };
}

/**
 * The YAML text of the open workflow in CodeMirror: every change goes to the
 * editor store (dirty state, Save); the page's live validation answers are
 * shown inline at their line (with the problem codes) and in the gutter.
 */
export function YamlTextEditor() {
  const host = useRef<HTMLDivElement>(null);
  const viewRef = useRef<EditorView | null>(null);
  const source = useYamlFile((s) => s.source);
  const editable = useYamlFile((s) => s.editable);

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const ed = useYamlFile.getState();
    const view = new EditorView({
      parent: el,
      state: EditorState.create({
        doc: ed.source,
        extensions: [
          lineNumbers(),
          history(),
          drawSelection(),
          highlightSpecialChars(),
          highlightActiveLine(),
          indentOnInput(),
          EditorState.tabSize.of(2),
          EditorState.readOnly.of(!ed.editable),
          EditorView.editable.of(ed.editable),
          yaml(),
          syntaxHighlighting(yamlHighlight),
          autocompletion({ override: [complete], activateOnTyping: true }),
          lintGutter(),
          keymap.of([...completionKeymap, indentWithTab, ...defaultKeymap, ...historyKeymap]),
          EditorView.contentAttributes.of({ 'aria-label': 'Workflow YAML', 'data-testid': 'yaml-text' }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) useYamlFile.getState().setSource(u.state.doc.toString());
          }),
          promptTheme,
          editorTheme,
        ],
      }),
    });
    viewRef.current = view;
    const showProblems = () => {
      const v = useValidation.getState();
      const doc = view.state.doc.toString();
      if (v.yamlSource !== doc) return;
      view.dispatch(setDiagnostics(view.state, problemsToDiagnostics(doc, v.problems)));
    };
    showProblems();
    const unsub = useValidation.subscribe(showProblems);
    return () => {
      unsub();
      view.destroy();
      viewRef.current = null;
    };
    // Mounted once per workflow: EditorPage keys it by workflow id and editability.
  }, []);

  // A change from outside (a canvas edit's answer, the disk's text): show it.
  useEffect(() => {
    const v = viewRef.current;
    if (!v || v.state.doc.toString() === source) return;
    v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: source } });
  }, [source]);

  return <div ref={host} className="yaml-text" data-testid="yaml-text-editor" data-readonly={editable ? undefined : 'true'} />;
}
