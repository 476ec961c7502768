// Pure helpers of the YAML workflow editor: completion (field names, node ids
// in depends_on, $id.output references), diagnostics positions, and the
// canvas side (which YAML edits a canvas gesture becomes).
import type { YamlEdit, YamlNodeKind, YamlProblem } from '../api/types';
import { freeSpot } from '../graph/layout';

/** Keys of the YAML loader (yamlflow/fields.go), by where they go. */
export const NODE_KIND_FIELDS: readonly YamlNodeKind[] = ['command', 'prompt', 'bash', 'script', 'loop', 'approval', 'cancel'];
export const NODE_FIELDS: readonly string[] = [
  'id',
  ...NODE_KIND_FIELDS,
  'depends_on',
  'when',
  'trigger_rule',
  'retry',
  'timeout',
  'output_type',
  'always_run',
  'model',
  'provider',
  'systemPrompt',
  'effort',
  'output_format',
  'context',
  'idle_timeout',
  'runtime',
  'deps',
  'allowed_tools',
  'denied_tools',
  'approve_tools',
  'max_turns',
  'mcp',
  'hooks',
  'skills',
  'include',
];
export const TOP_LEVEL_FIELDS: readonly string[] = ['name', 'description', 'nodes', 'provider', 'model', 'interactive', 'mutates_checkout', 'tags', 'pass_env', 'worktree'];
const BLOCK_FIELDS: Record<string, readonly string[]> = {
  loop: ['prompt', 'until', 'max_iterations', 'fresh_context', 'interactive', 'gate_message', 'until_bash'],
  approval: ['message', 'capture_response', 'on_reject'],
  on_reject: ['prompt', 'max_attempts'],
  retry: ['max_attempts', 'delay_ms', 'on_error'],
};
const FIELD_INFO: Record<string, string> = {
  id: 'node id',
  command: 'run a command file',
  prompt: 'ask the model',
  bash: 'run a shell script',
  script: 'run a bun/uv script',
  loop: 'repeat a prompt until done',
  approval: 'wait for a person',
  cancel: 'stop the run',
  depends_on: 'nodes this one waits for',
  when: 'run only if the condition holds',
  trigger_rule: 'all_success, one_success, …',
  allowed_tools: 'tools the agent may call',
  denied_tools: 'tools taken away',
  approve_tools: 'calls that wait for a person',
  max_turns: 'cap on model turns',
  mcp: 'MCP servers for the agent',
  hooks: 'PreToolUse / PostToolUse responses',
  skills: 'Claude Code skills to load',
  include: 'inline another workflow file',
  worktree: 'run in a git worktree',
};

export type CompletionItem = { label: string; type: 'property' | 'variable' | 'constant'; detail?: string; apply?: string };
export type CompletionAnswer = { from: number; options: CompletionItem[] };

/** The node ids a YAML text declares (`- id: x` or `id: x` inside a node), in order. */
export function yamlNodeIds(text: string): string[] {
  const ids: string[] = [];
  const re = /^[ \t]*(?:-[ \t]+)?id:[ \t]*["']?([A-Za-z0-9_.-]+)["']?[ \t]*(?:#.*)?$/gm;
  for (let m = re.exec(text); m; m = re.exec(text)) if (!ids.includes(m[1]!)) ids.push(m[1]!);
  return ids;
}

type Line = { text: string; from: number };

function linesOf(text: string): Line[] {
  const out: Line[] = [];
  let from = 0;
  for (const t of text.split('\n')) {
    out.push({ text: t, from });
    from += t.length + 1;
  }
  return out;
}

/** Column where a line's key starts (after indentation and list dashes); -1 for blank or comment lines. */
function keyColumn(line: string): number {
  const m = /^([ \t]*(?:-[ \t]+)*)(\S)/.exec(line);
  if (!m || m[2] === '#') return -1;
  return m[1]!.length;
}

function keyOf(line: string): string | null {
  const m = /^[ \t]*(?:-[ \t]+)*([A-Za-z_][\w-]*)[ \t]*:/.exec(line);
  return m ? m[1]! : null;
}

/** The id of the node whose item holds line index i (for excluding a node from its own depends_on). */
function enclosingNodeId(lines: Line[], i: number): string | null {
  for (let j = i; j >= 0; j--) {
    const t = lines[j]!.text;
    const m = /^[ \t]*(?:-[ \t]+)?id:[ \t]*["']?([A-Za-z0-9_.-]+)/.exec(t);
    if (m) return m[1]!;
    if (/^[ \t]*-[ \t]+/.test(t) && keyOf(t) !== null && j !== i) {
      // Another list item started above: look down from it for its id.
      for (let k = j; k < lines.length && k <= i + 40; k++) {
        const mm = /^[ \t]*(?:-[ \t]+)?id:[ \t]*["']?([A-Za-z0-9_.-]+)/.exec(lines[k]!.text);
        if (mm) return mm[1]!;
      }
      return null;
    }
  }
  return null;
}

/**
 * What to offer at pos in text: `$id.output` after a `$`, node ids inside
 * depends_on (inline `[a, b]` or a block list), and field names at a key
 * position (node fields inside `nodes:`, the block's keys inside loop:,
 * approval:, retry:, on_reject:, top-level keys at column 0). Null when
 * nothing fits.
 */
export function yamlCompletions(text: string, pos: number): CompletionAnswer | null {
  const lines = linesOf(text);
  let li = lines.findIndex((l) => pos >= l.from && pos <= l.from + l.text.length);
  if (li < 0) li = lines.length - 1;
  const line = lines[li]!;
  const before = line.text.slice(0, pos - line.from);
  const ids = yamlNodeIds(text);

  const ref = /\$([A-Za-z0-9_-]*)$/.exec(before);
  if (ref) {
    return {
      from: pos - ref[0].length,
      options: ids.map((id) => ({ label: `$${id}.output`, type: 'variable', detail: `output of ${id}` })),
    };
  }

  const self = enclosingNodeId(lines, li);
  const idOptions = (listed: string[]): CompletionItem[] =>
    ids.filter((id) => id !== self && !listed.includes(id)).map((id) => ({ label: id, type: 'constant', detail: 'node' }));

  const inline = /depends_on:[ \t]*\[([^\]]*)$/.exec(before);
  if (inline) {
    const word = /[A-Za-z0-9_.-]*$/.exec(before)![0];
    const listed = inline[1]!.split(',').map((s) => s.trim().replace(/^["']|["']$/g, ''));
    return { from: pos - word.length, options: idOptions(listed) };
  }

  const item = /^([ \t]*)-[ \t]+([A-Za-z0-9_.-]*)$/.exec(before);
  if (item) {
    const col = item[1]!.length;
    const listed: string[] = [];
    for (let j = li - 1; j >= 0; j--) {
      const t = lines[j]!.text;
      const kc = keyColumn(t);
      if (kc < 0) continue;
      const dash = /^([ \t]*)-[ \t]+(\S+)/.exec(t);
      if (dash && dash[1]!.length === col) {
        listed.push(dash[2]!);
        continue;
      }
      if ((dash ? dash[1]!.length : kc) < col && keyOf(t) === 'depends_on') {
        return { from: pos - item[2]!.length, options: idOptions(listed) };
      }
      break;
    }
  }

  const key = /^([ \t]*(?:-[ \t]+)*)([A-Za-z_]*)$/.exec(before);
  if (!key) return null;
  const col = key[1]!.length;
  const word = key[2]!;
  let fields: readonly string[] | null = null;
  if (col === 0) fields = TOP_LEVEL_FIELDS;
  else {
    for (let j = li - 1; j >= 0; j--) {
      const t = lines[j]!.text;
      const kc = keyColumn(t);
      if (kc < 0 || kc >= col) continue;
      const k = keyOf(t);
      if (k === 'nodes' && kc === 0) fields = NODE_FIELDS;
      else if (k && BLOCK_FIELDS[k]) fields = BLOCK_FIELDS[k]!;
      else if (/^[ \t]*-[ \t]+/.test(t) && kc < col) {
        // A list item whose keys start left of us: keep looking up.
        continue;
      }
      break;
    }
  }
  if (!fields) return null;
  // Keys the block already has (siblings at the same column) are not offered again.
  const taken = new Set<string>();
  for (let j = key[1]!.includes('-') ? -1 : li - 1; j >= 0; j--) {
    const t = lines[j]!.text;
    const kc = keyColumn(t);
    if (kc < 0 || kc > col) continue;
    if (kc < col) break;
    const k = keyOf(t);
    if (k) taken.add(k);
    if (/^[ \t]*-[ \t]+/.test(t)) break; // the item's first line
  }
  return {
    from: pos - word.length,
    options: fields
      .filter((f) => !taken.has(f))
      .map((f) => ({ label: f, type: 'property', detail: FIELD_INFO[f], apply: `${f}: ` })),
  };
}

export type LineDiagnostic = { from: number; to: number; severity: 'error' | 'warning'; message: string };

/** Diagnostics for problems with a line (whole line from its first non-blank); the others on line 1. */
export function problemsToDiagnostics(text: string, problems: readonly YamlProblem[]): LineDiagnostic[] {
  const lines = linesOf(text);
  return problems.map((p) => {
    const line = lines[Math.min(Math.max((p.line ?? 1) - 1, 0), lines.length - 1)]!;
    const indent = /^[ \t]*/.exec(line.text)![0].length;
    const start = p.column && p.column > 0 ? Math.min(p.column - 1, line.text.length) : indent;
    const from = line.from + start;
    const to = line.from + line.text.length;
    return { from, to: Math.max(to, from), severity: p.severity, message: `${p.code}: ${p.message}` };
  });
}

/** The field holding a step's main text (its kind's body). */
export function mainField(kind: string): string {
  if (kind === 'loop') return 'loop.prompt';
  if (kind === 'approval') return 'approval.message';
  return kind;
}

/** A fresh node id for a kind: `<kind>_<n>`, the first free n. */
export function newYamlNodeId(kind: string, existing: readonly string[]): string {
  const taken = new Set(existing);
  for (let n = 1; ; n++) if (!taken.has(`${kind}_${n}`)) return `${kind}_${n}`;
}

/** The YAML edits of canvas gestures. */
export const yamlEdits = {
  connect: (source: string, target: string): YamlEdit => ({ op: 'addDependency', node: target, dependency: source }),
  disconnect: (source: string, target: string): YamlEdit => ({ op: 'removeDependency', node: target, dependency: source }),
  deleteNode: (id: string): YamlEdit => ({ op: 'deleteNode', node: id }),
  addNode: (id: string, kind: YamlNodeKind, dependsOn: string[] = []): YamlEdit =>
    dependsOn.length ? { op: 'addNode', node: id, kind, dependsOn } : { op: 'addNode', node: id, kind },
  setMain: (id: string, kind: string, value: string): YamlEdit => ({ op: 'set', node: id, field: mainField(kind), value }),
};

/**
 * The edits that delete a selection: nodes (their edges go with them in the
 * file) and the selected edges between nodes that stay.
 */
export function deletionEdits(
  nodes: ReadonlyArray<{ id: string; selected?: boolean }>,
  edges: ReadonlyArray<{ source: string; target: string; selected?: boolean }>,
): YamlEdit[] {
  const gone = new Set(nodes.filter((n) => n.selected).map((n) => n.id));
  const out: YamlEdit[] = [];
  for (const e of edges) if (e.selected && !gone.has(e.source) && !gone.has(e.target)) out.push(yamlEdits.disconnect(e.source, e.target));
  for (const id of gone) out.push(yamlEdits.deleteNode(id));
  return out;
}

/**
 * Keeps the positions nodes already have when a new projection of the same
 * workflow arrives (then stored ones); a node new to the canvas keeps the
 * projection's spot, or the nearest free one when that spot is taken.
 */
export function keepPositions<N extends { id: string; position: { x: number; y: number } }>(
  next: N[],
  prev: ReadonlyArray<{ id: string; position: { x: number; y: number } }>,
  stored: Record<string, { x: number; y: number }> = {},
): N[] {
  const at = new Map(prev.map((n) => [n.id, n.position]));
  const kept = next.map((n) => {
    const p = at.get(n.id) ?? stored[n.id];
    return p ? { ...n, position: { x: p.x, y: p.y } } : n;
  });
  if (at.size === 0) return kept;
  const placed = kept.filter((n) => at.has(n.id) || stored[n.id]);
  return kept.map((n) => {
    if (at.has(n.id) || stored[n.id]) return n;
    const q = { ...n, position: freeSpot(placed, n.position, { width: 200, height: 90 }) };
    placed.push(q);
    return q;
  });
}

/** The text of a new YAML workflow file. */
export function starterYaml(path: string): string {
  const base = path.replace(/^.*\//, '').replace(/\.ya?ml$/i, '') || 'workflow';
  return `name: ${base}\ndescription: A new workflow.\nnodes:\n  - id: hello\n    bash: echo hello\n`;
}

/** A file name for the folder: `name.yaml` unless it already ends in .yaml/.yml. */
export function yamlFileName(name: string): string {
  const n = name.trim();
  return /\.ya?ml$/i.test(n) ? n : `${n}.yaml`;
}

/** A step setting the inspector edits beside the main text. */
export type YamlSetting = {
  field: string;
  label: string;
  type: 'text' | 'number' | 'rule';
  /** Only for these kinds (all when absent). */
  kinds?: readonly string[];
  hint?: string;
};

/** The loader's trigger rules ("" keeps the default, all_success). */
export const TRIGGER_RULES = ['all_success', 'one_success', 'none_failed_min_one_success', 'all_done'] as const;

export const YAML_SETTINGS: readonly YamlSetting[] = [
  { field: 'when', label: 'when', type: 'text', hint: "Run only if this holds, e.g. $a.output.n > 5 (empty: always)." },
  { field: 'trigger_rule', label: 'trigger_rule', type: 'rule', hint: 'How the step joins its dependencies.' },
  { field: 'timeout', label: 'timeout (ms)', type: 'number' },
  { field: 'retry.max_attempts', label: 'retry.max_attempts', type: 'number', hint: '1 to 5.' },
  { field: 'retry.delay_ms', label: 'retry.delay_ms', type: 'number', hint: '1000 to 60000.' },
  { field: 'loop.until', label: 'loop.until', type: 'text', kinds: ['loop'] },
  { field: 'loop.max_iterations', label: 'loop.max_iterations', type: 'number', kinds: ['loop'] },
  { field: 'approval.on_reject.prompt', label: 'on_reject.prompt', type: 'text', kinds: ['approval'] },
  { field: 'approval.on_reject.max_attempts', label: 'on_reject.max_attempts', type: 'number', kinds: ['approval'] },
];

/** The settings a step of this kind offers. */
export function settingsFor(kind: string): YamlSetting[] {
  return YAML_SETTINGS.filter((s) => !s.kinds || s.kinds.includes(kind));
}

/** A step's current settings as form text, from its canvas data. */
export function settingsText(data: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  const st = (data.settings ?? {}) as Record<string, unknown>;
  for (const s of YAML_SETTINGS) {
    const v = s.field === 'when' ? data.when : s.field === 'trigger_rule' ? data.triggerRule : st[s.field];
    out[s.field] = v === undefined || v === null ? '' : String(v);
  }
  return out;
}

/**
 * The `set` edits that turn the settings `before` into `after` (form text):
 * an emptied field is removed from the file (value null); numbers must be
 * whole; only changed fields are edited, so the file changes only there.
 */
export function settingsEdits(node: string, kind: string, before: Record<string, string>, after: Record<string, string>): YamlEdit[] {
  const edits: YamlEdit[] = [];
  const fields = settingsFor(kind);
  // A block whose every field is emptied goes as a whole: the file may not
  // keep an empty `retry:` (nor remove a mapping's only key).
  const dropped = new Set<string>();
  for (const block of ['retry', 'approval.on_reject']) {
    const inBlock = fields.filter((f) => f.field.startsWith(block + '.'));
    const had = inBlock.some((f) => (before[f.field] ?? '').trim() !== '');
    const empty = inBlock.every((f) => (after[f.field] ?? '').trim() === '');
    if (inBlock.length > 0 && had && empty) {
      edits.push({ op: 'set', node, field: block, value: null } as YamlEdit);
      for (const f of inBlock) dropped.add(f.field);
    }
  }
  for (const s of fields) {
    if (dropped.has(s.field)) continue;
    const a = (after[s.field] ?? '').trim();
    if (a === (before[s.field] ?? '').trim()) continue;
    let value: unknown = a === '' ? null : a;
    if (s.type === 'number' && a !== '') {
      if (!/^\d+$/.test(a)) throw new Error(`${s.label} must be a whole number, not "${a}"`);
      value = Number(a);
    }
    edits.push({ op: 'set', node, field: s.field, value } as YamlEdit);
  }
  return edits;
}
