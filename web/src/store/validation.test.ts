import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { setApiBase } from '../api/client';
import type { Graph } from '../graph/types';
import { resetEditorStore, useEditor } from './editor';
import { indexProblems, runBlocker, startValidation, useValidation } from './validation';

let server: Server;
const bodies: Graph[] = [];

beforeAll(async () => {
  // A loopback /api/validate that flags every agent without a user prompt.
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { graph } = JSON.parse(body) as { graph: Graph };
      bodies.push(graph);
      const problems = graph.nodes
        .filter((n) => n.type === 'agent' && !n.data.userPrompt)
        .map((n) => ({ code: 'empty_prompt', severity: 'error', message: `agent ${n.id} has no prompt`, nodeId: n.id }));
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ valid: problems.length === 0, problems }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  setApiBase(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
afterAll(async () => {
  setApiBase('');
  await new Promise<void>((r) => server.close(() => r()));
});

describe('validation', () => {
  it('validates after edits (debounced) and indexes problems by node', async () => {
    resetEditorStore();
    useEditor.getState().newWorkflow();
    const stop = startValidation();
    try {
      await vi.waitFor(() => expect(useValidation.getState().status).toBe('done'), { timeout: 15000 });
      expect(useValidation.getState().errors).toBe(0);
      const before = bodies.length;
      const a = useEditor.getState().addNode('agent', { x: 0, y: 0 });
      // Several quick edits collapse into one request.
      for (const v of ['', 'x', '']) useEditor.getState().updateNodeData(a, { userPrompt: v }, 'userPrompt');
      await vi.waitFor(() => expect(useValidation.getState().byNode[a]?.[0]?.code).toBe('empty_prompt'), { timeout: 15000 });
      expect(bodies.length - before).toBe(1);
      expect(runBlocker(useValidation.getState(), true)).toBe('Fix 1 error to run');
      useEditor.getState().updateNodeData(a, { userPrompt: 'hi' }, 'userPrompt');
      await vi.waitFor(() => expect(useValidation.getState().errors).toBe(0), { timeout: 15000 });
      expect(runBlocker(useValidation.getState(), true)).toBeNull();
      // What was sent is exactly the stored shape.
      expect(Object.keys(bodies.at(-1)!.nodes[0]!).sort()).toEqual(['data', 'id', 'position', 'type']);
    } finally {
      stop();
    }
  });

  it('drops the problems of the previous workflow at once when another opens', async () => {
    resetEditorStore();
    useEditor.getState().newWorkflow();
    const stop = startValidation();
    try {
      const a = useEditor.getState().addNode('agent', { x: 0, y: 0 });
      useEditor.getState().updateNodeData(a, { userPrompt: '' }, 'userPrompt');
      await vi.waitFor(() => expect(useValidation.getState().errors).toBe(1), { timeout: 15000 });
      // A YAML workflow: nothing to validate, cleared without the debounce.
      useEditor.setState({ workflowId: 'yaml.x.yaml', kind: 'yaml', rev: 10_001 });
      expect(useValidation.getState()).toMatchObject({ status: 'idle', errors: 0, byNode: {} });
      // Another drawn workflow: the old problems go while it is checked.
      useEditor.setState({ workflowId: null, kind: 'graph', rev: 10_002 });
      await vi.waitFor(() => expect(useValidation.getState().errors).toBe(1), { timeout: 15000 });
      useEditor.setState({ workflowId: 'w2', rev: 10_003 });
      expect(useValidation.getState()).toMatchObject({ status: 'pending', errors: 0, byNode: {} });
      await vi.waitFor(() => expect(useValidation.getState().status).toBe('done'), { timeout: 15000 });
    } finally {
      stop();
    }
  });
});

describe('indexProblems and runBlocker', () => {
  it('counts severities and groups by node and edge', () => {
    const idx = indexProblems([
      { code: 'a', severity: 'error', message: 'x', nodeId: 'n1' },
      { code: 'b', severity: 'warning', message: 'y', nodeId: 'n1' },
      { code: 'c', severity: 'error', message: 'z', edgeId: 'e1' },
      { code: 'd', severity: 'warning', message: 'w' },
    ]);
    expect(idx.errors).toBe(2);
    expect(idx.warnings).toBe(2);
    expect(idx.byNode.n1).toHaveLength(2);
    expect(idx.byEdge.e1).toHaveLength(1);
  });
  it('explains why Run is disabled', () => {
    expect(runBlocker({ status: 'done', errors: 0 }, false)).toBe('Server unreachable');
    expect(runBlocker({ status: 'pending', errors: 0 }, true)).toContain('Checking');
    expect(runBlocker({ status: 'unavailable', errors: 0 }, true)).toContain('unavailable');
    expect(runBlocker({ status: 'done', errors: 3 }, true)).toBe('Fix 3 errors to run');
    expect(runBlocker({ status: 'done', errors: 0 }, true)).toBeNull();
  });
});

describe('YAML run blockers', () => {
  it("the text as typed comes first: checking, then its errors; the server's reason for a saved file", async () => {
    const { yamlRunBlocker, cannotRunProblem } = await import('./validation');
    const y = { source: 'a', saved: 'a', runBlocker: 'node "ask": provider claude is not configured: set ANTHROPIC_API_KEY' };
    expect(yamlRunBlocker({ errors: 0, yamlSource: 'old' }, y, true)).toBe('Checking the text…');
    expect(yamlRunBlocker({ errors: 2, yamlSource: 'a' }, y, true)).toBe('Fix 2 errors to run');
    expect(yamlRunBlocker({ errors: 0, yamlSource: 'a' }, y, true)).toBe(y.runBlocker);
    expect(yamlRunBlocker({ errors: 0, yamlSource: 'b' }, { ...y, source: 'b' }, true)).toBeNull();
    expect(yamlRunBlocker({ errors: 0, yamlSource: 'a' }, y, false)).toBe('Server unreachable');
    expect(cannotRunProblem(y.runBlocker)).toEqual({
      code: 'cannot_run',
      severity: 'error',
      message: `Cannot run here: ${y.runBlocker}`,
      nodeId: 'ask',
    });
  });
});
