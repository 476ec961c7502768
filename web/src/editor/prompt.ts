/**
 * CodeMirror 6 pieces for prompt fields: variable highlighting (a view
 * plugin that scans only the visible lines), variable completion and a
 * theme on the app's CSS variables.
 */
import { autocompletion, type Completion, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { RangeSetBuilder, type Extension } from '@codemirror/state';
import { Decoration, EditorView, ViewPlugin, type DecorationSet, type ViewUpdate } from '@codemirror/view';
import { completeVariables, scanVariables, type CompletionNode, type VarTokenKind } from './variables';

export type VariableContext = {
  /** The graph's nodes, read when needed (not on every render). */
  nodes: () => readonly CompletionNode[];
  /** The node whose prompt this is (not offered as its own reference). */
  selfId: string | null;
};

const marks: Record<VarTokenKind | 'unknown', Decoration> = {
  previous: Decoration.mark({ class: 'cm-var cm-var--previous' }),
  var: Decoration.mark({ class: 'cm-var cm-var--named' }),
  ref: Decoration.mark({ class: 'cm-var cm-var--ref' }),
  unknown: Decoration.mark({ class: 'cm-var cm-var--unknown', attributes: { title: 'No node with this id in the workflow' } }),
};

/** Longest stretch scanned before a visible range (tokens never span lines). */
const LOOKBEHIND = 2000;

function buildDecorations(view: EditorView, ctx: VariableContext): DecorationSet {
  const b = new RangeSetBuilder<Decoration>();
  const ids = new Set(ctx.nodes().map((n) => n.id));
  const doc = view.state.doc;
  let done = 0;
  for (const { from, to } of view.visibleRanges) {
    // Start at the line start so a token is scanned from its beginning.
    const line = doc.lineAt(from);
    const start = Math.max(done, line.from, from - LOOKBEHIND);
    const endLine = doc.lineAt(to);
    const end = Math.min(endLine.to, to + 200);
    if (end <= start) continue;
    const text = doc.sliceString(start, end);
    for (const t of scanVariables(text)) {
      const kind = t.kind === 'ref' && !ids.has(t.name) ? 'unknown' : t.kind;
      b.add(start + t.from, start + t.to, marks[kind]);
    }
    done = end;
  }
  return b.finish();
}

export function variableHighlighter(ctx: VariableContext): Extension {
  return ViewPlugin.fromClass(
    class {
      decorations: DecorationSet;
      constructor(view: EditorView) {
        this.decorations = buildDecorations(view, ctx);
      }
      update(u: ViewUpdate) {
        if (u.docChanged || u.viewportChanged || u.focusChanged) this.decorations = buildDecorations(u.view, ctx);
      }
    },
    { decorations: (v) => v.decorations },
  );
}

/** The completion source: {{PREVIOUS_OUTPUT}}, $NAME and $<id>.output. */
export function variableCompletionSource(ctx: VariableContext) {
  return (c: CompletionContext): CompletionResult | null => {
    const line = c.state.doc.lineAt(c.pos);
    // Only the text just before the cursor matters (bounded for huge lines).
    const before = c.state.sliceDoc(Math.max(line.from, c.pos - 200), c.pos);
    const r = completeVariables(before, c.pos, ctx.nodes(), ctx.selfId, c.explicit);
    if (!r) return null;
    const options: Completion[] = r.options.map((o) => ({ ...o }));
    return { from: r.from, options, validFor: /^(\{\{?[A-Z_]*\}?\}?|\$[A-Za-z0-9_-]*(\.[A-Za-z]*)?)$/ };
  };
}

export function variableCompletion(ctx: VariableContext): Extension {
  return autocompletion({ override: [variableCompletionSource(ctx)], icons: false, activateOnTyping: true });
}

/** Colours from the app's CSS variables, so light and dark follow the app theme. */
export const promptTheme = EditorView.theme({
  '&': {
    backgroundColor: 'var(--panel)',
    color: 'var(--text)',
    border: '1px solid var(--border)',
    borderRadius: '6px',
    fontSize: '12px',
  },
  '&.cm-focused': { outline: '2px solid var(--focus)', outlineOffset: '0' },
  '.cm-scroller': {
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
    lineHeight: '1.5',
    overflow: 'auto',
  },
  '.cm-content': { padding: '5px 0', caretColor: 'var(--text)' },
  '.cm-line': { padding: '0 8px' },
  '.cm-cursor, .cm-dropCursor': { borderLeftColor: 'var(--text)' },
  '&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, ::selection': {
    backgroundColor: 'color-mix(in srgb, var(--accent) 28%, transparent)',
  },
  '.cm-placeholder': { color: 'var(--muted)' },
  '.cm-var': { borderRadius: '3px', padding: '0 1px' },
  '.cm-var--previous': { color: 'var(--node-start)', backgroundColor: 'color-mix(in srgb, var(--node-start) 14%, transparent)' },
  '.cm-var--named': { color: 'var(--node-approval)', backgroundColor: 'color-mix(in srgb, var(--node-approval) 14%, transparent)' },
  '.cm-var--ref': { color: 'var(--node-agent)', backgroundColor: 'color-mix(in srgb, var(--node-agent) 14%, transparent)' },
  '.cm-var--unknown': {
    color: 'var(--warning)',
    textDecoration: 'underline wavy var(--warning)',
    textUnderlineOffset: '3px',
  },
  '.cm-tooltip': {
    backgroundColor: 'var(--panel)',
    color: 'var(--text)',
    border: '1px solid var(--border)',
    borderRadius: '6px',
    boxShadow: 'var(--shadow)',
  },
  '.cm-tooltip.cm-tooltip-autocomplete > ul': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: '12px' },
  '.cm-tooltip.cm-tooltip-autocomplete > ul > li': { padding: '2px 8px' },
  '.cm-tooltip-autocomplete ul li[aria-selected]': { backgroundColor: 'var(--accent)', color: 'var(--accent-text)' },
  '.cm-completionDetail': { marginLeft: '10px', fontStyle: 'normal', color: 'var(--muted)' },
  '.cm-tooltip-autocomplete ul li[aria-selected] .cm-completionDetail': { color: 'inherit' },
  '.cm-completionInfo': { padding: '4px 8px', maxWidth: '260px' },
  '.cm-completionMatchedText': { textDecoration: 'none', fontWeight: '700' },
});
