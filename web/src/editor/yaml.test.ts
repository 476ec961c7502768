import { describe, expect, it } from 'vitest';
import {
  deletionEdits,
  keepPositions,
  mainField,
  newYamlNodeId,
  problemsToDiagnostics,
  settingsEdits,
  settingsFor,
  settingsText,
  starterYaml,
  yamlFileName,
  yamlCompletions,
  yamlEdits,
  yamlNodeIds,
} from './yaml';

const SRC = `name: demo
nodes:
  - id: hello
    bash: echo hi
  - id: ask
    prompt: "Say $hello.output"
    depends_on: [hello]
`;

/** Completions at the `|` of text. */
function at(textWithCursor: string) {
  const pos = textWithCursor.indexOf('|');
  return yamlCompletions(textWithCursor.replace('|', ''), pos);
}
const labels = (r: ReturnType<typeof at>) => r?.options.map((o) => o.label) ?? null;

describe('yamlNodeIds', () => {
  it('lists the ids in order, quoted or not', () => {
    expect(yamlNodeIds(SRC)).toEqual(['hello', 'ask']);
    expect(yamlNodeIds(`nodes:\n  - id: "a-1"\n  -\n    id: 'b'\n`)).toEqual(['a-1', 'b']);
  });
});

describe('yamlCompletions', () => {
  it('offers node fields at a key position inside nodes, without the keys the node has', () => {
    const r = at(`nodes:\n  - id: a\n    bash: x\n    dep|\n`);
    expect(r?.from).toBe(`nodes:\n  - id: a\n    bash: x\n    `.length);
    expect(labels(r)).toContain('depends_on');
    expect(labels(r)).toContain('trigger_rule');
    expect(labels(r)).not.toContain('id');
    expect(labels(r)).not.toContain('bash');
    expect(r?.options.find((o) => o.label === 'when')?.apply).toBe('when: ');
  });
  it('offers every node field on a new list item', () => {
    const l = labels(at(`nodes:\n  - id: a\n    bash: x\n  - |`));
    expect(l).toContain('id');
    expect(l).toContain('bash');
  });
  it('offers top-level keys at column 0 and block keys inside loop/approval/retry', () => {
    expect(labels(at(`na|`))).toEqual(expect.arrayContaining(['name', 'nodes', 'provider']));
    expect(labels(at(`nodes:\n  - id: l\n    loop:\n      un|`))).toEqual(expect.arrayContaining(['until', 'max_iterations', 'prompt']));
    expect(labels(at(`nodes:\n  - id: g\n    approval:\n      |`))).toEqual(['message', 'capture_response', 'on_reject']);
    expect(labels(at(`nodes:\n  - id: g\n    retry:\n      max_attempts: 2\n      |`))).toEqual(['delay_ms', 'on_error']);
  });
  it('offers node ids in an inline depends_on, not the node itself nor listed ones', () => {
    const text = `nodes:\n  - id: a\n    bash: x\n  - id: b\n    bash: y\n  - id: c\n    depends_on: [a, |]\n`;
    const r = at(text);
    expect(labels(r)).toEqual(['b']);
    expect(r?.from).toBe(text.indexOf('|'));
  });
  it('offers node ids in a block depends_on list', () => {
    const r = at(`nodes:\n  - id: a\n    bash: x\n  - id: b\n    bash: y\n  - id: c\n    depends_on:\n      - b\n      - |\n`);
    expect(labels(r)).toEqual(['a']);
  });
  it('offers $id.output references after a $', () => {
    const text = `nodes:\n  - id: a\n    bash: x\n  - id: b\n    prompt: "use $a|"\n`;
    const r = at(text);
    expect(labels(r)).toEqual(['$a.output', '$b.output']);
    expect(r?.from).toBe(text.indexOf('$a|'));
  });
  it('offers nothing inside a value', () => {
    expect(at(`nodes:\n  - id: a\n    bash: ec|`)).toBeNull();
  });
});

describe('problemsToDiagnostics', () => {
  it('puts a problem on its line from the given column (or the first non-blank) with its code', () => {
    const d = problemsToDiagnostics(SRC, [
      { code: 'unknown_dependency', severity: 'error', message: 'no node x', line: 7, column: 5 },
      { code: 'unknown_field', severity: 'warning', message: 'bogus', line: 4 },
      { code: 'no_line', severity: 'error', message: 'whole file' },
    ]);
    const lines = SRC.split('\n');
    const line7 = SRC.indexOf(lines[6]!);
    expect(d[0]).toEqual({ from: line7 + 4, to: line7 + lines[6]!.length, severity: 'error', message: 'unknown_dependency: no node x' });
    expect(SRC.slice(d[1]!.from, d[1]!.to)).toBe('bash: echo hi');
    expect(d[1]!.severity).toBe('warning');
    expect(d[2]!.from).toBe(0);
  });
  it('clamps lines past the end', () => {
    const d = problemsToDiagnostics('a: 1', [{ code: 'x', severity: 'error', message: 'm', line: 99 }]);
    expect(d[0]).toMatchObject({ from: 0, to: 4 });
  });
});

describe('canvas gestures as YAML edits', () => {
  it('maps connect, disconnect, delete, add and the main field', () => {
    expect(yamlEdits.connect('a', 'b')).toEqual({ op: 'addDependency', node: 'b', dependency: 'a' });
    expect(yamlEdits.disconnect('a', 'b')).toEqual({ op: 'removeDependency', node: 'b', dependency: 'a' });
    expect(yamlEdits.addNode('bash_1', 'bash')).toEqual({ op: 'addNode', node: 'bash_1', kind: 'bash' });
    expect(yamlEdits.addNode('p', 'prompt', ['a'])).toEqual({ op: 'addNode', node: 'p', kind: 'prompt', dependsOn: ['a'] });
    expect(yamlEdits.setMain('g', 'approval', 'ok?')).toEqual({ op: 'set', node: 'g', field: 'approval.message', value: 'ok?' });
    expect(mainField('loop')).toBe('loop.prompt');
    expect(mainField('bash')).toBe('bash');
  });
  it('deletes selected nodes and only the selected edges between nodes that stay', () => {
    const edits = deletionEdits(
      [{ id: 'a', selected: true }, { id: 'b' }, { id: 'c' }],
      [
        { source: 'a', target: 'b', selected: true },
        { source: 'b', target: 'c', selected: true },
        { source: 'a', target: 'c' },
      ],
    );
    expect(edits).toEqual([
      { op: 'removeDependency', node: 'c', dependency: 'b' },
      { op: 'deleteNode', node: 'a' },
    ]);
  });
  it('picks the first free id of a kind', () => {
    expect(newYamlNodeId('bash', ['bash_1', 'bash_3'])).toBe('bash_2');
  });
  it('keeps the positions of known nodes, then stored ones, else the projection', () => {
    const next = [
      { id: 'a', position: { x: 0, y: 0 } },
      { id: 'b', position: { x: 1, y: 1 } },
      { id: 'c', position: { x: 2, y: 2 } },
    ];
    const r = keepPositions(next, [{ id: 'a', position: { x: 10, y: 20 } }], { b: { x: 5, y: 6 } });
    expect(r[0]!.position).toEqual({ x: 10, y: 20 });
    expect(r[1]!.position).toEqual({ x: 5, y: 6 });
    // c's projected spot is under a and b: it moves to a free one.
    const c = r[2]!.position;
    for (const o of [r[0]!.position, r[1]!.position]) expect(Math.abs(c.x - o.x) >= 200 || Math.abs(c.y - o.y) >= 90).toBe(true);
  });
  it('keeps a new node at its projected spot when that is free, and everything as projected on a first load', () => {
    const r = keepPositions([{ id: 'a', position: { x: 0, y: 0 } }, { id: 'n', position: { x: 900, y: 900 } }], [{ id: 'a', position: { x: 0, y: 0 } }]);
    expect(r[1]!.position).toEqual({ x: 900, y: 900 });
    const first = keepPositions([{ id: 'a', position: { x: 3, y: 4 } }], []);
    expect(first[0]!.position).toEqual({ x: 3, y: 4 });
  });
});

describe('new YAML files', () => {
  it('names the file .yaml unless it ends in .yaml or .yml', () => {
    expect(yamlFileName(' flow ')).toBe('flow.yaml');
    expect(yamlFileName('team/flow.yml')).toBe('team/flow.yml');
    expect(yamlFileName('a.YAML')).toBe('a.YAML');
  });
  it('starts the text with the file name as its name and one step', () => {
    const t = starterYaml('team/my-flow.yaml');
    expect(t).toMatch(/^name: my-flow\n/);
    expect(yamlNodeIds(t)).toEqual(['hello']);
  });
});

describe('step settings', () => {
  it('reads the settings the canvas data carries', () => {
    expect(
      settingsText({ when: '$a.output.n > 5', triggerRule: 'one_success', settings: { 'retry.max_attempts': 3, timeout: 60000 } }),
    ).toMatchObject({ when: '$a.output.n > 5', trigger_rule: 'one_success', 'retry.max_attempts': '3', timeout: '60000', 'retry.delay_ms': '' });
  });
  it('edits only what changed; an emptied field is removed; numbers are numbers', () => {
    const before = settingsText({ when: 'x', settings: { timeout: 1000 } });
    const after = { ...before, when: '', timeout: '2000', 'retry.max_attempts': '2' };
    expect(settingsEdits('b', 'bash', before, after)).toEqual([
      { op: 'set', node: 'b', field: 'when', value: null },
      { op: 'set', node: 'b', field: 'timeout', value: 2000 },
      { op: 'set', node: 'b', field: 'retry.max_attempts', value: 2 },
    ]);
  });
  it('offers loop and approval settings only on those kinds', () => {
    expect(settingsFor('bash').map((s) => s.field)).not.toContain('loop.until');
    expect(settingsFor('loop').map((s) => s.field)).toContain('loop.max_iterations');
    expect(settingsFor('approval').map((s) => s.field)).toContain('approval.on_reject.prompt');
  });
  it('removes a block whose every field is emptied as a whole', () => {
    const before = settingsText({ settings: { 'retry.max_attempts': 2, timeout: 5 } });
    expect(settingsEdits('b', 'bash', before, { ...before, 'retry.max_attempts': '' })).toEqual([
      { op: 'set', node: 'b', field: 'retry', value: null },
    ]);
  });
  it('refuses a number that is not whole', () => {
    expect(() => settingsEdits('b', 'bash', settingsText({}), { ...settingsText({}), timeout: '1.5' })).toThrow(/whole number/);
  });
});
