import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { api, ApiError } from '../api/client';
import type { Workflow, YamlEdit, YamlSave } from '../api/types';
import { useApp } from './app';
import { resetEditorStore, useEditor } from './editor';
import { openWorkflow } from './editing';
import { AUTOSAVE_MS, canRedoYaml, canUndoYaml, isYamlDirty, resetYamlFileStore, useYamlFile } from './yamlFile';

// A fake file behind PUT /api/workflows/{id}: source saves and a few edits,
// with the hash check of the real server (409 with yours/disk/base).
const ID = 'yaml.t.yaml';
const SRC = 'name: t\ndescription: d\nnodes:\n  - id: a\n    bash: echo a\n  - id: b\n    depends_on: [a]\n    bash: echo b\n';
const hashOf = (t: string) => `h${[...t].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7)}`;

function graphOf(text: string) {
  const ids = [...text.matchAll(/- id: (\w+)/g)].map((m) => m[1]!);
  const edges: Array<{ id: string; source: string; target: string }> = [];
  for (const block of text.split('  - id: ').slice(1)) {
    const id = block.split('\n')[0]!;
    const deps = /depends_on: \[([^\]]*)\]/.exec(block)?.[1]?.split(',').map((s) => s.trim()).filter(Boolean) ?? [];
    for (const d of deps) edges.push({ id: `${d}->${id}`, source: d, target: id });
  }
  return {
    nodes: ids.map((id, i) => ({ id, type: 'yaml', position: { x: i * 300, y: 0 }, data: { label: id, kind: 'bash' } })),
    edges: edges.map((e) => ({ ...e, sourceHandle: 'output', targetHandle: 'input' })),
  };
}

let disk = SRC;
const wf = (text: string): Workflow =>
  ({ id: ID, kind: 'yaml', name: 't', description: 'd', version: 1, createdAt: '', updatedAt: '', graph: graphOf(text), source: text, sourceHash: hashOf(text), editable: true, path: 't.yaml' }) as unknown as Workflow;

function applyEdit(text: string, e: YamlEdit): string {
  if (e.op === 'deleteNode') {
    return text
      .replace(new RegExp(`  - id: ${e.node}\\n(    .*\\n)*`), '')
      .replace(new RegExp(`    depends_on: \\[${e.node}\\]\\n`, 'g'), '');
  }
  if (e.op === 'addDependency') return text.replace(`  - id: ${e.node}\n`, `  - id: ${e.node}\n    depends_on: [${e.dependency}]\n`);
  if (e.op === 'addNode') return `${text}  - id: ${e.node}\n    ${e.kind}: x\n`;
  throw new Error(`edit ${e.op} not in the fake`);
}

const sent: YamlSave[] = [];
let toasts: Array<{ message: string; action?: { label: string; run: () => void } }> = [];

beforeEach(async () => {
  disk = SRC;
  sent.length = 0;
  toasts = [];
  resetEditorStore();
  resetYamlFileStore();
  vi.spyOn(api, 'getWorkflow').mockImplementation(async () => wf(disk));
  vi.spyOn(api, 'getYamlPositions').mockResolvedValue({ positions: {} });
  vi.spyOn(api, 'putYamlPositions').mockResolvedValue({ positions: {} });
  vi.spyOn(api, 'saveYaml').mockImplementation(async (_id, body) => {
    sent.push(body);
    if (body.baseHash !== hashOf(disk)) {
      throw new ApiError('http', 409, 'conflict', 'changed on disk', [], { error: { code: 'conflict', message: 'changed' }, disk, diskHash: hashOf(disk), yours: body.source });
    }
    disk = body.source ?? (body.edits ?? []).reduce(applyEdit, disk);
    return wf(disk);
  });
  useApp.setState({
    toast: (message: string, _kind?: unknown, o?: { action?: { label: string; run: () => void } }) => {
      toasts.push({ message, action: o?.action });
    },
  } as never);
  await openWorkflow(ID);
});
afterEach(() => {
  vi.useRealTimers();
  resetEditorStore();
  resetYamlFileStore();
  vi.restoreAllMocks();
});

const y = () => useYamlFile.getState();
const ed = () => useEditor.getState();

describe('YAML file store: every write is one undo step', () => {
  it('deleting a root step says what it did, with Undo; undo writes the text back byte for byte over the new hash; redo again', async () => {
    ed().selectOnly('a');
    expect(await y().deleteSelected()).toBe(true);
    expect(disk).not.toContain('id: a');
    expect(disk).not.toContain('depends_on');
    expect(toasts).toHaveLength(1);
    expect(toasts[0]!.message).toBe('Deleted step a; b no longer waits for it.');
    expect(toasts[0]!.action?.label).toBe('Undo');
    expect(canUndoYaml(y())).toBe(true);
    expect(y().history.past.map((w) => w.label)).toEqual(['Delete step a']);

    const afterDelete = disk;
    toasts[0]!.action!.run();
    await vi.waitFor(() => expect(disk).toBe(SRC));
    expect(sent.at(-1)).toEqual({ source: SRC, baseHash: hashOf(afterDelete) });
    expect(ed().nodes.map((n) => n.id)).toEqual(['a', 'b']);
    expect(ed().edges.map((e) => e.id)).toEqual(['a->b']);
    expect(canRedoYaml(y())).toBe(true);

    expect(await y().redo()).toBe(true);
    expect(disk).toBe(afterDelete);
    expect(sent.at(-1)).toEqual({ source: afterDelete, baseHash: hashOf(SRC) });
  });

  it('a step brought back by undo goes back to where it was on the canvas', async () => {
    ed().placeNodes({ a: { x: -400, y: 250 } });
    ed().selectOnly('a');
    await y().deleteSelected();
    expect(ed().nodes.map((n) => n.id)).toEqual(['b']);
    await y().undo();
    expect(ed().nodes.find((n) => n.id === 'a')!.position).toEqual({ x: -400, y: 250 });
  });

  it('writes go one at a time, each with the hash the one before got', async () => {
    const one = y().applyEdits([{ op: 'addNode', node: 'c', kind: 'bash' }]);
    const two = y().applyEdits([{ op: 'addNode', node: 'd', kind: 'bash' }]);
    expect(await Promise.all([one, two])).toEqual([true, true]);
    expect(sent.map((b) => b.baseHash)).toEqual([hashOf(SRC), hashOf(`${SRC}  - id: c\n    bash: x\n`)]);
    expect(y().history.past).toHaveLength(2);
    expect(y().saving).toBe(false);
  });

  it('typed text is written once checked free of errors and typing paused; text with errors is not', async () => {
    vi.useFakeTimers();
    const broken = SRC.replace('depends_on: [a]', 'depends_on: [nope]');
    y().setSource(broken);
    y().noteChecked(broken, 1);
    await vi.advanceTimersByTimeAsync(AUTOSAVE_MS * 3);
    expect(sent).toHaveLength(0);
    expect(isYamlDirty(y())).toBe(true);

    const fixed = SRC.replace('echo b', 'echo B');
    y().setSource(fixed);
    y().noteChecked(fixed, 0);
    await vi.advanceTimersByTimeAsync(AUTOSAVE_MS - 50);
    expect(sent).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(100);
    expect(sent).toEqual([{ source: fixed, baseHash: hashOf(SRC) }]);
    expect(isYamlDirty(y())).toBe(false);
    // Typing more soon after is the same undo step.
    const more = fixed.replace('echo a', 'echo A');
    y().setSource(more);
    y().noteChecked(more, 0);
    await vi.advanceTimersByTimeAsync(AUTOSAVE_MS + 50);
    expect(disk).toBe(more);
    expect(y().history.past.map((w) => [w.kind, w.before === SRC, w.after === more])).toEqual([['text', true, true]]);
  });

  it('undo first drops typed text that is not written yet, without a write', async () => {
    y().setSource(SRC + '# typed\n');
    expect(canUndoYaml(y())).toBe(true);
    expect(await y().undo()).toBe(true);
    expect(y().source).toBe(SRC);
    expect(sent).toHaveLength(0);
  });

  it('undo never overwrites a change made on disk since: the write is refused (409) and the merge view opens', async () => {
    ed().selectOnly('a');
    await y().deleteSelected();
    disk = disk.replace('echo b', 'echo changed-elsewhere');
    await expect(y().undo()).rejects.toBeInstanceOf(ApiError);
    expect(disk).toContain('changed-elsewhere');
    expect(y().conflict).toMatchObject({ yours: SRC, disk });
  });
});

describe('YAML file store: the file changed on disk', () => {
  it('checkDisk notices another hash; merging writes the merge over the disk hash; undo gives the disk text back', async () => {
    await y().checkDisk();
    expect(y().diskChange).toBeNull();
    disk = SRC.replace('echo a', 'echo disk');
    await y().checkDisk();
    expect(y().diskChange).toEqual({ source: disk, hash: hashOf(disk) });
    y().setSource(SRC.replace('echo b', 'echo mine'));
    y().mergeDiskChange();
    expect(y().conflict).toMatchObject({ base: SRC, disk, yours: SRC.replace('echo b', 'echo mine') });
    const merged = SRC.replace('echo a', 'echo disk').replace('echo b', 'echo mine');
    expect(await y().resolveConflict({ merged })).toBe(true);
    expect(disk).toBe(merged);
    expect(sent.at(-1)).toEqual({ source: merged, baseHash: hashOf(SRC.replace('echo a', 'echo disk')) });
    expect(y().conflict).toBeNull();
    expect(y().diskChange).toBeNull();
    expect(isYamlDirty(y())).toBe(false);
    await y().undo();
    expect(disk).toBe(SRC.replace('echo a', 'echo disk'));
  });

  it('reload takes the disk text and starts undo afresh', async () => {
    ed().selectOnly('a');
    await y().deleteSelected();
    disk = SRC;
    await y().reload();
    expect(y().source).toBe(SRC);
    expect(y().history.past).toHaveLength(0);
    expect(ed().nodes.map((n) => n.id)).toEqual(['a', 'b']);
  });
});

describe('YAML file store: disk changes pushed over GET /api/ws (workflow_changed)', () => {
  const push = (m: Partial<{ id: string; hash: string; deleted: boolean }>) =>
    y().noteWorkflowChanged({ type: 'workflow_changed', id: ID, path: 't.yaml', ...m });
  const getCalls = () => vi.mocked(api.getWorkflow).mock.calls.length;

  it('a push with another hash fetches the file and shows the banner; its own hash, or another file, changes nothing', async () => {
    const loads = getCalls();
    push({ hash: hashOf(SRC) });
    push({ id: 'yaml.other.yaml', hash: 'h1' });
    expect(getCalls()).toBe(loads);
    expect(y().diskChange).toBeNull();

    disk = SRC.replace('echo a', 'echo disk');
    push({ hash: hashOf(disk) });
    await vi.waitFor(() => expect(y().diskChange).toEqual({ source: disk, hash: hashOf(disk) }));

    // The disk back to the text here: the banner goes.
    disk = SRC;
    push({ hash: hashOf(SRC) });
    expect(y().diskChange).toBeNull();
  });

  it('the announcement of its own write, arriving before the write is answered, shows no banner', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const real = vi.mocked(api.saveYaml).getMockImplementation()!;
    vi.mocked(api.saveYaml).mockImplementation(async (id, body) => {
      const w = await real(id, body); // written: the server announces it now
      push({ hash: w.sourceHash ?? '' });
      await gate;
      return w;
    });
    const write = y().applyEdits([{ op: 'addNode', node: 'c', kind: 'bash' }]);
    await vi.waitFor(() => expect(disk).toContain('id: c'));
    release();
    expect(await write).toBe(true);
    await vi.waitFor(() => expect(y().pending).toBe(0));
    await Promise.resolve();
    expect(y().sourceHash).toBe(hashOf(disk));
    expect(y().diskChange).toBeNull();
  });

  it('someone else’s change announced while a write is on its way shows the banner once the write is answered', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const real = vi.mocked(api.saveYaml).getMockImplementation()!;
    let other = '';
    vi.mocked(api.saveYaml).mockImplementation(async (id, body) => {
      const w = await real(id, body);
      other = disk.replace('echo b', 'echo elsewhere'); // then another program writes
      disk = other;
      push({ hash: hashOf(other) });
      await gate;
      return w;
    });
    const write = y().applyEdits([{ op: 'addNode', node: 'c', kind: 'bash' }]);
    await vi.waitFor(() => expect(other).not.toBe(''));
    expect(y().diskChange).toBeNull(); // not while the write is out
    release();
    await write;
    await vi.waitFor(() => expect(y().diskChange).toEqual({ source: other, hash: hashOf(other) }));
  });

  it('a deleted file shows the banner for a deletion', () => {
    push({ deleted: true });
    expect(y().diskChange).toEqual({ source: '', hash: '', deleted: true });
  });

  it('pushLive follows the socket', () => {
    y().setPushLive(true);
    expect(y().pushLive).toBe(true);
    y().setPushLive(false);
    expect(y().pushLive).toBe(false);
  });
});
