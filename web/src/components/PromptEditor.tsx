import { completionKeymap } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { Compartment, EditorState, type Extension, type Text } from '@codemirror/state';
import { EditorView, drawSelection, highlightSpecialChars, keymap, placeholder as placeholderExt } from '@codemirror/view';
import { useEffect, useRef } from 'react';
import { createCommitter, type Committer } from '../editor/commit';
import { promptTheme, variableCompletion, variableHighlighter, type VariableContext } from '../editor/prompt';

/** Idle time after the last key before the text is written to the editor store. */
export const COMMIT_DEBOUNCE_MS = 250;

/**
 * Lines longer than this are not wrapped: a wrapped line is laid out whole on
 * every key, an unwrapped one is drawn only where it is visible.
 */
export const WRAP_LIMIT = 20_000;

function hasHugeLine(doc: Text): boolean {
  if (doc.length <= WRAP_LIMIT) return false;
  for (const it = doc.iterLines(); !it.next().done; ) if (it.value.length > WRAP_LIMIT) return true;
  return false;
}

export type PromptEditorProps = {
  id: string;
  /** The stored value; outside changes (undo, another tab's load) replace the text. */
  value: string;
  /** Called with the whole text when typing pauses, on blur and on Ctrl+S, only when it changed. */
  onCommit: (value: string) => void;
  label: string;
  describedBy?: string;
  testId: string;
  readOnly?: boolean;
  /** Variable highlighting and completion; null for plain text fields. */
  variables?: VariableContext | null;
  rows?: number;
  placeholder?: string;
};

/**
 * A CodeMirror 6 text field. The document lives in CodeMirror while typing:
 * the store (and so the canvas, validation and undo history) sees the text
 * once per burst of typing (COMMIT_DEBOUNCE_MS idle, blur, Ctrl+S, unmount),
 * not once per key. The data-testid, id and aria-label are on the
 * contenteditable, so tests can fill() it like a textarea.
 */
export function PromptEditor(props: PromptEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const viewRef = useRef<EditorView | null>(null);
  const committer = useRef<Committer | null>(null);
  const latest = useRef(props);
  latest.current = props;
  const extensionsRef = useRef<Extension[]>([]);
  const wrapRef = useRef<((v: EditorView) => void) | null>(null);

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const p = latest.current;
    const wrapping = new Compartment();
    const wrapFor = (doc: Text) => (hasHugeLine(doc) ? [] : EditorView.lineWrapping);
    const rewrap = (v: EditorView) => {
      const want = hasHugeLine(v.state.doc);
      if (want !== (wrapping.get(v.state) !== EditorView.lineWrapping)) v.dispatch({ effects: wrapping.reconfigure(wrapFor(v.state.doc)) });
    };
    wrapRef.current = rewrap;
    const c = createCommitter(
      () => viewRef.current?.state.doc.toString() ?? c.committed(),
      (text) => {
        // Once per burst: a paste may have made (or removed) a huge line.
        if (viewRef.current) rewrap(viewRef.current);
        latest.current.onCommit(text);
      },
      p.value,
      COMMIT_DEBOUNCE_MS,
    );
    committer.current = c;
    const flush = () => void c.flush();
    const lineH = 18;
    const extensions: Extension[] = [
      history(),
      drawSelection(),
      highlightSpecialChars(),
      wrapping.of(wrapFor(EditorState.create({ doc: p.value }).doc)),
      EditorState.readOnly.of(!!p.readOnly),
      EditorView.editable.of(!p.readOnly),
      keymap.of([
        // Ctrl+S saves from the page's handler: write the text first.
        { key: 'Mod-s', run: () => (flush(), false) },
        ...completionKeymap,
        ...defaultKeymap,
        ...historyKeymap,
      ]),
      EditorView.contentAttributes.of({
        id: p.id,
        'aria-label': p.label,
        ...(p.describedBy ? { 'aria-describedby': p.describedBy } : {}),
        'data-testid': p.testId,
      }),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) c.changed();
      }),
      promptTheme,
      EditorView.theme({
        '.cm-content': { minHeight: `${(p.rows ?? 4) * lineH + 10}px` },
        '&': { maxHeight: '360px' },
      }),
      p.placeholder ? placeholderExt(p.placeholder) : [],
      p.variables ? [variableHighlighter(p.variables), variableCompletion(p.variables)] : [],
    ];
    extensionsRef.current = extensions;
    const view = new EditorView({ parent: el, state: EditorState.create({ doc: p.value, extensions }) });
    viewRef.current = view;
    // focusout fires at mousedown, before a click on Save or on the canvas.
    const onFocusOut = () => flush();
    el.addEventListener('focusout', onFocusOut);
    return () => {
      el.removeEventListener('focusout', onFocusOut);
      flush();
      c.dispose();
      view.destroy();
      viewRef.current = null;
      committer.current = null;
    };
    // Mounted once per field: Inspector keys it by node and field.
  }, []);

  // A change from outside (undo/redo, reload): show it.
  useEffect(() => {
    const v = viewRef.current;
    const c = committer.current;
    if (!v || !c || props.value === c.committed()) return;
    c.reset(props.value);
    if (v.state.doc.toString() === props.value) return;
    const hadFocus = v.hasFocus;
    v.setState(EditorState.create({ doc: props.value, extensions: extensionsRef.current }));
    wrapRef.current?.(v);
    if (hadFocus) v.focus();
  }, [props.value]);

  return <div ref={host} className="prompt-editor" data-readonly={props.readOnly ? 'true' : undefined} />;
}
