import { describe, expect, it } from 'vitest';
import { findNodes, folderOf, groupWorkflows, matchesWorkflow, yamlTags } from './find';

const wf = (id: string, name: string, kind = 'graph', path?: string, description = '') => ({ id, name, kind, path, description });

describe('workflow list search', () => {
  it('finds by name, folder, description and tags (#tag for tags only)', () => {
    const a = wf('yaml.team__nightly.yaml', 'Nightly build and publish', 'yaml', 'team/nightly.yaml', 'Runs every night');
    expect(matchesWorkflow(a, ['ops'], 'nightly')).toBe(true);
    expect(matchesWorkflow(a, ['ops'], 'team')).toBe(true);
    expect(matchesWorkflow(a, ['ops'], 'every night')).toBe(true);
    expect(matchesWorkflow(a, ['ops'], '#op')).toBe(true);
    expect(matchesWorkflow(a, ['ops'], '#nightly')).toBe(false);
    expect(matchesWorkflow(a, ['ops'], 'ops publish')).toBe(true);
    expect(matchesWorkflow(a, ['ops'], 'deploy')).toBe(false);
    expect(matchesWorkflow(a, [], '')).toBe(true);
  });
  it('reads tags from YAML text, inline or as a block', () => {
    expect(yamlTags('name: x\ntags: [ops, "nightly"]\nnodes: []\n')).toEqual(['ops', 'nightly']);
    expect(yamlTags('name: x\ntags:\n  - ops\n  - qa\nnodes: []\n')).toEqual(['ops', 'qa']);
    expect(yamlTags('name: x\n')).toEqual([]);
  });
  it('groups drawn workflows, then YAML files by folder, names in order', () => {
    const groups = groupWorkflows([
      wf('3', 'zeta', 'yaml', 'team/z.yaml'),
      wf('1', 'Beta'),
      wf('4', 'top', 'yaml', 'top.yaml'),
      wf('2', 'alpha'),
      wf('5', 'alpha', 'yaml', 'team/a.yaml'),
    ]);
    expect(groups.map((g) => [g.label, g.items.map((i) => i.id)])).toEqual([
      ['Drawn', ['2', '1']],
      ['YAML files', ['4']],
      ['team/', ['5', '3']],
    ]);
    expect(folderOf({ kind: 'yaml', path: 'a/b/c.yaml' })).toBe('a/b');
  });
});

describe('findNodes', () => {
  const nodes = [
    { id: 'n1', type: 'start', position: { x: 0, y: 0 }, data: {} },
    { id: 'n2', type: 'agent', position: { x: 300, y: 0 }, data: { agentName: 'Writer', userPrompt: 'Write a haiku about trains' } },
    { id: 'n3', type: 'agent', position: { x: 600, y: 0 }, data: { agentName: 'Reviewer', userPrompt: 'Check the haiku' } },
    { id: 'fetch', type: 'yaml', position: { x: 100, y: 200 }, data: { label: 'fetch', kind: 'bash', detail: 'curl https://x' } },
  ];
  it('matches ids, names, kinds and prompt text; exact names first, then left to right', () => {
    expect(findNodes(nodes, 'haiku')).toEqual(['n2', 'n3']);
    expect(findNodes(nodes, 'reviewer')).toEqual(['n3']);
    expect(findNodes(nodes, 'bash curl')).toEqual(['fetch']);
    expect(findNodes(nodes, 'n')).toEqual(['n1', 'n2', 'n3']);
    expect(findNodes(nodes, 'writer')).toEqual(['n2']);
    expect(findNodes(nodes, '  ')).toEqual([]);
  });
});
