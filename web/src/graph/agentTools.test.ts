import { beforeEach, describe, expect, it } from 'vitest';
import { resetEditorStore, useEditor } from '../store/editor';
import {
  approveOf,
  builtinOf,
  extraPatterns,
  mcpOf,
  needsApproval,
  parsePatterns,
  setBuiltin,
  setExtraPatterns,
  setMcp,
  setNeedsApproval,
  toolChips,
} from './agentTools';
import { toGraph } from './serialize';
import type { AgentTools, Graph } from './types';

describe('agent tools data', () => {
  it('adds built-in tools in the checklist order, keeping names it does not know', () => {
    let t: AgentTools = { web_search: false, subagents: false, builtin: ['Future'] };
    t = setBuiltin(t, 'Bash', true);
    t = setBuiltin(t, 'Read', true);
    expect(t).toEqual({ web_search: false, subagents: false, builtin: ['Read', 'Bash', 'Future'] });
    t = setBuiltin(t, 'Bash', false);
    expect(builtinOf(t)).toEqual(['Read', 'Future']); // names the checklist does not know stay
    // The server's list (GET /api/config builtinTools) sets the order.
    expect(builtinOf(setBuiltin(t, 'Future', true, ['Future', 'Read']))).toEqual(['Read', 'Future']);
    expect(builtinOf(setBuiltin({}, 'Fetch', true, ['Read', 'Fetch']))).toEqual(['Fetch']);
    expect(builtinOf(setBuiltin(t, 'Future', false))).toEqual(['Read']);
  });

  it('removes a list that becomes empty, so no empty key is saved', () => {
    const t = setBuiltin(setBuiltin({ web_search: true }, 'Write', true), 'Write', false);
    expect(t).toEqual({ web_search: true });
    expect(setMcp(setMcp(undefined, 'github', true), 'github', false)).toEqual({});
  });

  it('writes "needs approval" as the tool name in data.tools.approve, before other patterns', () => {
    let t: AgentTools = { builtin: ['Write', 'Bash'], approve: ['Bash(git push:*)'] };
    t = setNeedsApproval(t, 'Write', true);
    expect(t.approve).toEqual(['Write', 'Bash(git push:*)']);
    expect(needsApproval(t, 'Write')).toBe(true);
    expect(needsApproval(t, 'Bash')).toBe(false);
    t = setNeedsApproval(t, 'Write', false);
    expect(t.approve).toEqual(['Bash(git push:*)']);
  });

  it('drops a tool’s approval when the tool is turned off, keeping patterns', () => {
    const t = setBuiltin({ builtin: ['Write', 'Bash'], approve: ['Write', 'Bash(git push:*)'] }, 'Write', false);
    expect(t).toEqual({ builtin: ['Bash'], approve: ['Bash(git push:*)'] });
  });

  it('keeps typed approval patterns apart from the per-tool toggles', () => {
    expect(parsePatterns('  Bash(git push:*)\n\nmcp__github__create_*\nBash(git push:*)\n')).toEqual(['Bash(git push:*)', 'mcp__github__create_*']);
    let t: AgentTools = { builtin: ['Edit'], approve: ['Edit'] };
    t = setExtraPatterns(t, ['mcp__github__create_*', 'Edit']);
    expect(approveOf(t)).toEqual(['Edit', 'mcp__github__create_*']);
    expect(extraPatterns(t)).toEqual(['mcp__github__create_*']);
    expect(setExtraPatterns(t, [])).toEqual({ builtin: ['Edit'], approve: ['Edit'] });
    // No change: the same object back.
    expect(setExtraPatterns(t, ['mcp__github__create_*'])).toBe(t);
  });

  it('picks MCP servers by name', () => {
    let t = setMcp({ web_search: false }, 'github', true);
    t = setMcp(t, 'fs', true);
    expect(mcpOf(t)).toEqual(['github', 'fs']);
    expect(setMcp(t, 'github', false)).toEqual({ web_search: false, mcp: ['fs'] });
  });

  it('summarises the tools as node chips', () => {
    expect(toolChips({ builtin: ['Read', 'Write'], approve: ['Write', 'Bash(rm:*)'], mcp: ['github'] }).map((c) => [c.text, c.approve])).toEqual([
      ['Read', false],
      ['Write ⚑', true],
      ['mcp:github', false],
      ['⚑ 1', true],
    ]);
    expect(toolChips(undefined)).toEqual([]);
  });
});

describe('agent tools in the editor', () => {
  const graph: Graph = {
    nodes: [
      { id: 'n1', type: 'start', position: { x: 0, y: 0 }, data: { initialInput: 'x' } },
      { id: 'n2', type: 'agent', position: { x: 200, y: 0 }, data: { agentName: 'A', tools: { web_search: false, subagents: false } } },
      { id: 'n3', type: 'agent', position: { x: 400, y: 0 }, data: { agentName: 'B' } },
    ],
    edges: [{ id: 'e1', source: 'n1', target: 'n2', sourceHandle: 'output', targetHandle: 'input' }],
  };
  const st = () => useEditor.getState();
  const saved = () => toGraph(st().nodes, st().edges);
  beforeEach(() => {
    resetEditorStore();
    st().newWorkflow({ graph });
  });

  it('saves a graph that never used the new fields exactly as it was', () => {
    expect(saved()).toEqual(graph);
  });

  it('saves the checked tools, their approvals and the servers into data.tools', () => {
    const tools = () => st().nodes.find((n) => n.id === 'n2')!.data.tools as AgentTools;
    const set = (next: AgentTools) => st().updateNodeData('n2', { tools: next }, 'tools');
    set(setBuiltin(tools(), 'Write', true));
    set(setNeedsApproval(tools(), 'Write', true));
    set(setBuiltin(tools(), 'Read', true));
    set(setMcp(tools(), 'github', true));
    const n2 = saved().nodes.find((n) => n.id === 'n2')!;
    expect(n2.data.tools).toEqual({ web_search: false, subagents: false, builtin: ['Read', 'Write'], approve: ['Write'], mcp: ['github'] });
    // The other agent is untouched.
    expect(saved().nodes.find((n) => n.id === 'n3')!.data).toEqual({ agentName: 'B' });
    st().undo();
    expect((saved().nodes.find((n) => n.id === 'n2')!.data.tools as AgentTools).mcp).toBeUndefined();
  });
});
