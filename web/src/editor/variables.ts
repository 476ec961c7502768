/**
 * Prompt variables of drawn graphs, as the engine substitutes them
 * (engine/vars.go: Substitute, execVars.Var). Pure functions: the scanner
 * tokenizes exactly like Substitute (one left-to-right pass), and the
 * completion logic works on plain text so both are unit-tested without a
 * browser.
 */

/** {{PREVIOUS_OUTPUT}}: the output of the node(s) before this one. */
export const PREVIOUS_OUTPUT = '{{PREVIOUS_OUTPUT}}';

/** $NAME variables of drawn graphs (engine/vars.go execVars.Var). */
export const NAMED_VARS: readonly { name: string; info: string }[] = [
  { name: 'ARGUMENTS', info: 'The input the run was started with' },
  { name: 'REJECTION_REASON', info: 'The note given when an approval was rejected' },
  { name: 'WORKFLOW_ID', info: 'The id of this run' },
  { name: 'ARTIFACTS_DIR', info: "The run's artifacts directory" },
];
const NAMED = new Set(NAMED_VARS.map((v) => v.name));

export type VarTokenKind = 'previous' | 'var' | 'ref';

export type VarToken = {
  from: number;
  to: number;
  kind: VarTokenKind;
  /** The variable name ('ARGUMENTS') or the node id of a $<id>.output reference. */
  name: string;
  /** The .field of $<id>.output.<field>, when there is one. */
  field?: string;
};

const isIdent = (c: number) =>
  c === 95 /* _ */ || c === 45 /* - */ || (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57);
const isFieldStart = (c: number) => c === 95 || (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
const isField = (c: number) => isFieldStart(c) || (c >= 48 && c <= 57);

/** engine scanIdent: letters, digits, _ and -, without trailing '-'. Returns the end index. */
function scanIdent(s: string, i: number, end: number): number {
  let j = i;
  while (j < end && isIdent(s.charCodeAt(j))) j++;
  while (j > i && s.charCodeAt(j - 1) === 45) j--;
  return j;
}

/**
 * The variables in s[from, to) (whole string by default), positions in s.
 * Unknown $NAMEs are left out (the engine leaves them literal, like $HOME).
 */
export function scanVariables(s: string, from = 0, to = s.length): VarToken[] {
  const out: VarToken[] = [];
  const OUTPUT = '.output';
  let i = from;
  while (i < to) {
    const c = s.charCodeAt(i);
    if (c === 123 /* { */ && s.startsWith(PREVIOUS_OUTPUT, i) && i + PREVIOUS_OUTPUT.length <= to) {
      out.push({ from: i, to: i + PREVIOUS_OUTPUT.length, kind: 'previous', name: 'PREVIOUS_OUTPUT' });
      i += PREVIOUS_OUTPUT.length;
      continue;
    }
    if (c !== 36 /* $ */) {
      i++;
      continue;
    }
    const end = scanIdent(s, i + 1, to);
    if (end === i + 1) {
      i++;
      continue;
    }
    const name = s.slice(i + 1, end);
    const afterOut = end + OUTPUT.length;
    if (s.startsWith(OUTPUT, end) && afterOut <= to) {
      const next = afterOut < to ? s.charCodeAt(afterOut) : 0;
      if (next === 45 || !isIdent(next)) {
        let stop = afterOut;
        let field: string | undefined;
        if (s.charCodeAt(stop) === 46 /* . */ && stop + 1 < to && isFieldStart(s.charCodeAt(stop + 1))) {
          let j = stop + 1;
          while (j < to && isField(s.charCodeAt(j))) j++;
          field = s.slice(stop + 1, j);
          stop = j;
        }
        out.push(field === undefined ? { from: i, to: stop, kind: 'ref', name } : { from: i, to: stop, kind: 'ref', name, field });
        i = stop;
        continue;
      }
    }
    if (NAMED.has(name)) out.push({ from: i, to: end, kind: 'var', name });
    i = end;
  }
  return out;
}

export type CompletionNode = { id: string; type?: string; label?: string };

export type VarCompletion = {
  label: string;
  detail?: string;
  info?: string;
  type: 'variable' | 'constant';
};

export type VarCompletionResult = { from: number; options: VarCompletion[] };

/**
 * Completions for the text before the cursor. `before` ends at the cursor;
 * `pos` is the cursor's document position (before.length when before is the
 * whole prefix). Offers {{PREVIOUS_OUTPUT}} after "{{", and the $NAME
 * variables and $<id>.output for the graph's other nodes after "$".
 * explicit (Ctrl+Space) also answers with no trigger typed.
 */
export function completeVariables(
  before: string,
  pos: number,
  nodes: readonly CompletionNode[],
  selfId: string | null,
  explicit = false,
): VarCompletionResult | null {
  const prev: VarCompletion = { label: PREVIOUS_OUTPUT, detail: 'previous output', info: 'The output of the node before this one', type: 'constant' };
  const brace = /\{\{?[A-Z_]*$/.exec(before);
  if (brace) {
    // "{" alone is ordinary text (JSON); answer from the second brace on.
    if (!brace[0].startsWith('{{') && !explicit) return null;
    return { from: pos - brace[0].length, options: [prev] };
  }
  const dollar = /\$[A-Za-z0-9_-]*(?:\.[A-Za-z]*)?$/.exec(before);
  if (!dollar && !explicit) return null;
  const options: VarCompletion[] = NAMED_VARS.map((v) => ({ label: `$${v.name}`, info: v.info, detail: 'variable', type: 'variable' }));
  for (const n of nodes) {
    if (n.id === selfId) continue;
    options.push({
      label: `$${n.id}.output`,
      detail: n.label ? `${n.type ?? 'node'} · ${n.label}` : (n.type ?? 'node'),
      info: `The output of node ${n.id}`,
      type: 'variable',
    });
  }
  if (!dollar) {
    // Explicit completion with no trigger: insert at the cursor.
    return { from: pos, options: [prev, ...options] };
  }
  return { from: pos - dollar[0].length, options };
}
