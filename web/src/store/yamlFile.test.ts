import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { api, ApiError } from '../api/client';
import type { Workflow } from '../api/types';
import { resetEditorStore, useEditor } from './editor';
import { openWorkflow } from './editing';
import { isYamlDirty, resetYamlFileStore, useYamlFile } from './yamlFile';

const st = () => useYamlFile.getState();
const ed = () => useEditor.getState();
const isDirty = isYamlDirty;

const SRC = 'name: t\ndescription: d\nnodes:\n  - id: a\n    bash: echo a\n  - id: b\n    bash: echo b\n';
const graph = (edges: Array<[string, string]> = []) => ({
  nodes: ['a', 'b'].map((id, i) => ({ id, type: 'yaml', position: { x: 0, y: i * 200 }, data: { label: id, kind: 'bash', detail: `echo ${id}` } })),
  edges: edges.map(([s, t]) => ({ id: `${s}->${t}`, source: s, target: t, sourceHandle: 'output', targetHandle: 'input' })),
});
const wf = (source: string, hash: string, edges: Array<[string, string]> = []): Workflow =>
  ({
    id: 'yaml.t.yaml',
    kind: 'yaml',
    name: 't',
    description: 'd',
    version: 1,
    createdAt: '',
    updatedAt: '',
    graph: graph(edges),
    source,
    sourceHash: hash,
    editable: true,
    path: 't.yaml',
  }) as unknown as Workflow;

beforeEach(async () => {
  resetEditorStore();
  resetYamlFileStore();
  vi.spyOn(api, 'getWorkflow').mockResolvedValue(wf(SRC, 'h0'));
  vi.spyOn(api, 'getYamlPositions').mockResolvedValue({ positions: {} });
  await openWorkflow('yaml.t.yaml');
});
afterEach(() => {
  resetEditorStore();
  resetYamlFileStore();
  vi.restoreAllMocks();
});

describe('editor store with an editable YAML workflow', () => {
  it('typed text is unsaved until Save sends it with the hash it started from; the new hash is kept', async () => {
    expect(st().editable).toBe(true);
    st().setSource(SRC + '  - id: c\n    bash: echo c\n');
    expect(isDirty(st())).toBe(true);
    const save = vi.spyOn(api, 'saveYaml').mockImplementation(async (_id, body) => wf(body.source!, 'h1'));
    expect(await st().save()).toBe(true);
    expect(save).toHaveBeenCalledWith('yaml.t.yaml', { source: SRC + '  - id: c\n    bash: echo c\n', baseHash: 'h0' });
    expect(st().sourceHash).toBe('h1');
    expect(isDirty(st())).toBe(false);
  });

  it('a connection on the canvas is an addDependency edit; the answer becomes the text and the edges', async () => {
    const after = SRC.replace('  - id: b\n', '  - id: b\n    depends_on: [a]\n');
    const save = vi.spyOn(api, 'saveYaml').mockResolvedValue(wf(after, 'h2', [['a', 'b']]));
    void st().connect({ source: 'a', target: 'b', sourceHandle: 'output', targetHandle: 'input' });
    await vi.waitFor(() => expect(st().source).toBe(after));
    expect(save).toHaveBeenCalledWith('yaml.t.yaml', { edits: [{ op: 'addDependency', node: 'b', dependency: 'a' }], baseHash: 'h0' });
    expect(ed().edges.map((e) => e.id)).toEqual(['a->b']);
    expect(isDirty(st())).toBe(false);
  });

  it('unsaved text is saved before a canvas edit applies to the file', async () => {
    const typed = SRC.replace('echo a', 'echo A');
    st().setSource(typed);
    const calls: unknown[] = [];
    vi.spyOn(api, 'saveYaml').mockImplementation(async (_id, body) => {
      calls.push(body);
      return body.source ? wf(body.source, 'h1') : wf(typed, 'h2');
    });
    ed().selectOnly('b');
    void st().deleteSelected();
    await vi.waitFor(() => expect(calls).toHaveLength(2));
    expect(calls).toEqual([
      { source: typed, baseHash: 'h0' },
      { edits: [{ op: 'deleteNode', node: 'b' }], baseHash: 'h1' },
    ]);
  });

  it('a 409 keeps yours, disk and base; Keep mine saves yours again over the disk hash', async () => {
    st().setSource(SRC + '# mine\n');
    const body = { error: { code: 'conflict', message: 'changed on disk' }, yours: SRC + '# mine\n', disk: SRC + '# theirs\n', diskHash: 'hd', base: SRC };
    const save = vi.spyOn(api, 'saveYaml').mockRejectedValueOnce(new ApiError('http', 409, 'conflict', 'changed on disk', [], body));
    await expect(st().save()).rejects.toBeInstanceOf(ApiError);
    expect(st().conflict).toEqual(body);
    expect(isDirty(st())).toBe(true);
    save.mockResolvedValueOnce(wf(SRC + '# mine\n', 'h3'));
    expect(await st().resolveConflict('mine')).toBe(true);
    expect(save).toHaveBeenLastCalledWith('yaml.t.yaml', { source: SRC + '# mine\n', baseHash: 'hd' });
    expect(st().conflict).toBeNull();
    expect(st().sourceHash).toBe('h3');
    expect(isDirty(st())).toBe(false);
  });

  it('a live projection keeps the positions nodes have', () => {
    ed().onNodesChange([{ type: 'position', id: 'a', position: { x: 500, y: 40 }, dragging: false }]);
    ed().applyProjection(graph([['a', 'b']]));
    expect(ed().nodes.find((n) => n.id === 'a')!.position).toEqual({ x: 500, y: 40 });
    expect(ed().edges).toHaveLength(1);
  });
});
