import { CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { EditorState } from '@codemirror/state';
import { describe, expect, it } from 'vitest';
import { variableCompletionSource } from './prompt';
import { completeVariables, scanVariables, type CompletionNode } from './variables';

const tokens = (s: string) => scanVariables(s).map((t) => [s.slice(t.from, t.to), t.kind, t.from, t.to]);

describe('scanVariables (highlighter token ranges)', () => {
  it('finds {{PREVIOUS_OUTPUT}}, named variables and node references with their ranges', () => {
    const s = 'Use {{PREVIOUS_OUTPUT}} and $n2.output, why: $REJECTION_REASON.';
    expect(tokens(s)).toEqual([
      ['{{PREVIOUS_OUTPUT}}', 'previous', 4, 23],
      ['$n2.output', 'ref', 28, 38],
      ['$REJECTION_REASON', 'var', 45, 62],
    ]);
  });

  it('covers all named variables of drawn graphs and leaves unknown $NAMEs alone', () => {
    expect(tokens('$ARGUMENTS $WORKFLOW_ID $ARTIFACTS_DIR $HOME $rejection_reason').map((t) => t[0])).toEqual([
      '$ARGUMENTS',
      '$WORKFLOW_ID',
      '$ARTIFACTS_DIR',
    ]);
  });

  it('takes a .field after .output and ids with - and _', () => {
    const r = scanVariables('x $my-node_2.output.summary!');
    expect(r).toEqual([{ from: 2, to: 27, kind: 'ref', name: 'my-node_2', field: 'summary' }]);
  });

  it('tokenizes like the engine: trailing -, .outputs, $$, broken braces', () => {
    // A trailing '-' is punctuation ("$a.output--").
    expect(tokens('$a.output--')).toEqual([['$a.output', 'ref', 0, 9]]);
    // .outputs is not a reference; $a alone is an unknown name.
    expect(tokens('$a.outputs')).toEqual([]);
    // .output- then more: still a reference (engine: next == '-').
    expect(tokens('$a.output-x')).toEqual([['$a.output', 'ref', 0, 9]]);
    // A field must start with a letter or _.
    expect(tokens('$a.output.1x')).toEqual([['$a.output', 'ref', 0, 9]]);
    expect(tokens('$$ARGUMENTS')).toEqual([['$ARGUMENTS', 'var', 1, 11]]);
    expect(tokens('{{PREVIOUS_OUTPUT} {PREVIOUS_OUTPUT}} {{ PREVIOUS_OUTPUT }}')).toEqual([]);
    expect(tokens('{{{PREVIOUS_OUTPUT}}}')).toEqual([['{{PREVIOUS_OUTPUT}}', 'previous', 1, 20]]);
  });

  it('scans a window of the text with positions in the whole text', () => {
    const s = '$ARGUMENTS then {{PREVIOUS_OUTPUT}} then $n1.output';
    const r = scanVariables(s, 11, 35);
    expect(r.map((t) => [t.from, t.to, t.kind])).toEqual([[16, 35, 'previous']]);
    // A token cut by the window's end is not reported.
    expect(scanVariables(s, 11, 30)).toEqual([]);
  });

  it('is linear on a large prompt', () => {
    const line = 'Summarise $a2.output and {{PREVIOUS_OUTPUT}} politely.\n';
    const s = line.repeat(10_000);
    const t0 = performance.now();
    const r = scanVariables(s);
    expect(r).toHaveLength(20_000);
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});

const nodes: CompletionNode[] = [
  { id: 'n1', type: 'Start' },
  { id: 'n2', type: 'Agent', label: 'Writer' },
  { id: 'n3', type: 'Approval' },
];
const labels = (r: ReturnType<typeof completeVariables>) => r?.options.map((o) => o.label);

describe('completeVariables (which completions for a graph and cursor)', () => {
  it('after $ offers the named variables and $<id>.output of the other nodes', () => {
    const r = completeVariables('Hello $', 7, nodes, 'n2');
    expect(r?.from).toBe(6);
    expect(labels(r)).toEqual(['$ARGUMENTS', '$REJECTION_REASON', '$WORKFLOW_ID', '$ARTIFACTS_DIR', '$n1.output', '$n3.output']);
    expect(r?.options.find((o) => o.label === '$n1.output')?.detail).toBe('Start');
  });

  it('keeps the typed prefix in the range (the list filters on it)', () => {
    const r = completeVariables('see $n', 106, nodes, null);
    expect(r?.from).toBe(106 - 2);
    expect(labels(r)).toContain('$n2.output');
    expect(r?.options.find((o) => o.label === '$n2.output')?.detail).toBe('Agent · Writer');
    expect(completeVariables('see $n3.out', 11, nodes, null)?.from).toBe(4);
    expect(completeVariables('why: $REJ', 9, nodes, null)?.from).toBe(5);
  });

  it('after {{ offers {{PREVIOUS_OUTPUT}} only', () => {
    expect(completeVariables('Text {{', 7, nodes, 'n2')).toEqual({ from: 5, options: [expect.objectContaining({ label: '{{PREVIOUS_OUTPUT}}' })] });
    expect(completeVariables('Text {{PREV', 11, nodes, 'n2')?.from).toBe(5);
  });

  it('offers nothing in ordinary text, after a single {, or after a finished reference', () => {
    expect(completeVariables('Hello', 5, nodes, null)).toBeNull();
    expect(completeVariables('JSON: {', 7, nodes, null)).toBeNull();
    expect(completeVariables('$n1.output ', 11, nodes, null)).toBeNull();
    expect(completeVariables('costs 5 $ ', 10, nodes, null)).toBeNull();
  });

  it('explicit completion (Ctrl+Space) without a trigger offers everything at the cursor', () => {
    const r = completeVariables('Hello ', 6, nodes, 'n1', true);
    expect(r?.from).toBe(6);
    expect(labels(r)?.[0]).toBe('{{PREVIOUS_OUTPUT}}');
    expect(labels(r)).toContain('$n2.output');
    expect(labels(r)).not.toContain('$n1.output');
  });
});

describe('variableCompletionSource (CodeMirror)', () => {
  const run = (doc: string, pos = doc.length, explicit = false) => {
    const state = EditorState.create({ doc });
    const src = variableCompletionSource({ nodes: () => nodes, selfId: 'n2' });
    return src(new CompletionContext(state, pos, explicit)) as CompletionResult | null;
  };

  it('answers at the cursor with document positions, on any line', () => {
    const r = run('first line\nsecond $n', 20);
    expect(r?.from).toBe(18);
    expect(r?.options.map((o) => o.label)).toContain('$n3.output');
    expect(r?.validFor instanceof RegExp && r.validFor.test('$n3.outp')).toBe(true);
  });

  it('looks only at the text before the cursor', () => {
    expect(run('abc {{ def', 6)?.from).toBe(4);
    expect(run('abc {{ def', 10)).toBeNull();
  });

  it('reads the nodes when asked: a node added later is offered', () => {
    const list: CompletionNode[] = [{ id: 'a' }];
    const src = variableCompletionSource({ nodes: () => list, selfId: null });
    const ctx = () => new CompletionContext(EditorState.create({ doc: '$' }), 1, false);
    expect((src(ctx()) as CompletionResult).options.map((o) => o.label)).toContain('$a.output');
    list.push({ id: 'b' });
    expect((src(ctx()) as CompletionResult).options.map((o) => o.label)).toContain('$b.output');
  });
});
