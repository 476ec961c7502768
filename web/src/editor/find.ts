// Finding things: workflows in the list (by name, folder, tags,
// description), grouped in folders; and nodes on a canvas (by id, name,
// kind and text).

export type ListedWorkflow = { id: string; name: string; description: string; kind: string; path?: string };

/** A YAML file's folder in the workflows folder ("" at its top); drawn workflows have none. */
export function folderOf(w: Pick<ListedWorkflow, 'path' | 'kind'>): string {
  if (w.kind !== 'yaml' || !w.path) return '';
  const i = w.path.lastIndexOf('/');
  return i < 0 ? '' : w.path.slice(0, i);
}

/** The tags of a YAML text (`tags: [a, b]` or a block list), for search. */
export function yamlTags(source: string): string[] {
  const inline = /^tags:[ \t]*\[([^\]]*)\]/m.exec(source);
  if (inline) return inline[1]!.split(',').map((t) => t.trim().replace(/^["']|["']$/g, '')).filter(Boolean);
  const block = /^tags:[ \t]*\n((?:[ \t]+-[ \t]*.+\n?)+)/m.exec(source);
  if (block) return block[1]!.split('\n').map((l) => l.replace(/^[ \t]+-[ \t]*/, '').trim().replace(/^["']|["']$/g, '')).filter(Boolean);
  return [];
}

/** Words of a query; every word must match somewhere (name, folder, path, tag, description). `#tag` only matches tags. */
export function matchesWorkflow(w: ListedWorkflow, tags: readonly string[], query: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const hay = [w.name, w.description, w.path ?? '', folderOf(w), w.kind].join('\n').toLowerCase();
  const tagText = tags.map((t) => t.toLowerCase());
  return words.every((word) => {
    if (word.startsWith('#')) return tagText.some((t) => t.startsWith(word.slice(1)));
    return hay.includes(word) || tagText.some((t) => t.includes(word));
  });
}

export type WorkflowGroup<W> = { key: string; label: string; items: W[] };

/**
 * The list in groups: drawn workflows first, then YAML files by folder (the
 * workflows folder's top first, then sub-folders in name order); names in
 * order inside each.
 */
export function groupWorkflows<W extends ListedWorkflow>(list: readonly W[]): WorkflowGroup<W>[] {
  const byName = (a: W, b: W) => a.name.localeCompare(b.name, undefined, { sensitivity: 'base' });
  const drawn = list.filter((w) => w.kind !== 'yaml').sort(byName);
  const folders = new Map<string, W[]>();
  for (const w of list) {
    if (w.kind !== 'yaml') continue;
    const f = folderOf(w);
    (folders.get(f) ?? folders.set(f, []).get(f)!).push(w);
  }
  const out: WorkflowGroup<W>[] = [];
  if (drawn.length) out.push({ key: 'drawn', label: 'Drawn', items: drawn });
  for (const f of [...folders.keys()].sort((a, b) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b)))) {
    out.push({ key: `yaml:${f}`, label: f ? `${f}/` : 'YAML files', items: folders.get(f)!.sort(byName) });
  }
  return out;
}

export type SearchableNode = { id: string; type?: string; data: Record<string, unknown> };

/** The text a node is found by: its id, names, kind and main texts. */
export function nodeText(n: SearchableNode): string {
  const d = n.data;
  const fields = ['agentName', 'label', 'kind', 'text', 'detail', 'userPrompt', 'systemPrompt', 'prompt', 'initialInput', 'when'];
  const parts = [n.id, n.type ?? ''];
  for (const f of fields) if (typeof d[f] === 'string') parts.push(d[f] as string);
  if (Array.isArray(d.conditions)) for (const c of d.conditions) if (c && typeof c === 'object' && 'value' in c) parts.push(String((c as { value: unknown }).value));
  return parts.join('\n').toLowerCase();
}

/**
 * Ids of the nodes matching a query (every word somewhere in the node's
 * text), best first: an exact id or name, then a name or id that starts
 * with the query, then the rest in canvas order (left to right, top down).
 */
export function findNodes<N extends SearchableNode & { position: { x: number; y: number } }>(nodes: readonly N[], query: string): string[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const words = q.split(/\s+/);
  const name = (n: N) => String(n.data.agentName ?? n.data.label ?? '').toLowerCase();
  const rank = (n: N) => (n.id.toLowerCase() === q || name(n) === q ? 0 : n.id.toLowerCase().startsWith(q) || name(n).startsWith(q) ? 1 : 2);
  return nodes
    .filter((n) => !n.id.startsWith('group:'))
    .filter((n) => {
      const t = nodeText(n);
      return words.every((w) => t.includes(w));
    })
    .sort((a, b) => rank(a) - rank(b) || a.position.x - b.position.x || a.position.y - b.position.y)
    .map((n) => n.id);
}
