import { api, ApiError } from '../api/client';
import { normalizeLegacy } from '../graph/legacy';
import { arrangedByElk } from '../graph/elkLayout';
import { nodesOverlap } from '../graph/layout';
import { looksLegacy, parseGraph } from '../graph/serialize';
import type { Graph } from '../graph/types';

export type ImportResult = {
  graph: Graph;
  notes: string[];
  /** Edges left out because a node they name is not in the file, e.g. "e3: a → zz (no node zz)". */
  dropped: string[];
};

/**
 * Leaves out edges whose source or target is not a node of the graph, and
 * says which: the canvas could not draw them, and saving would fail.
 */
export function dropDanglingEdges(g: Graph): { graph: Graph; dropped: string[] } {
  const ids = new Set(g.nodes.map((n) => n.id));
  const dropped: string[] = [];
  const edges = g.edges.filter((e) => {
    const missing = [e.source, e.target].filter((id) => !ids.has(id));
    if (missing.length === 0) return true;
    dropped.push(`${e.id}: ${e.source || '(none)'} → ${e.target || '(none)'} (no node ${[...new Set(missing)].map((m) => m || '""').join(' or ')})`);
    return false;
  });
  return { graph: { ...g, edges }, dropped };
}

function withDropped(r: { graph: Graph; notes: string[] }): ImportResult {
  const { graph, dropped } = dropDanglingEdges(r.graph);
  const notes = dropped.length
    ? [...r.notes, `Left out ${dropped.length} edge${dropped.length === 1 ? '' : 's'} to missing nodes: ${dropped.join('; ')}.`]
    : r.notes;
  return { graph, notes, dropped };
}

/**
 * Reads a graph file: current shape as is; legacy shape through the server's
 * normalizer (or, when the server is unreachable, the local fallback). A file
 * holding a whole workflow object ({name, graph}) is accepted too.
 */
export async function importGraphText(text: string): Promise<ImportResult> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new Error(`Not valid JSON: ${(e as Error).message}`);
  }
  if (raw && typeof raw === 'object' && 'graph' in raw && !('nodes' in raw)) raw = (raw as { graph: unknown }).graph;
  if (!looksLegacy(raw)) return withDropped({ graph: parseGraph(raw), notes: [] });
  try {
    const r = await api.normalize(raw);
    const notes = (Array.isArray(r.problems) ? r.problems : []).map((p) =>
      typeof p === 'string' ? p : `${p.severity}: ${p.message}`,
    );
    return withDropped(await untangle({ graph: parseGraph(r.graph), notes: ['Converted from the legacy format.', ...notes] }));
  } catch (e) {
    if (e instanceof ApiError && e.unreachable) {
      const r = normalizeLegacy(raw);
      return withDropped(await untangle({ graph: r.graph, notes: ['Converted from the legacy format locally (server unreachable).', ...r.problems] }));
    }
    throw e;
  }
}

/** Legacy positions were made for smaller boxes: re-arrange when nodes would overlap. */
async function untangle(r: { graph: Graph; notes: string[] }): Promise<{ graph: Graph; notes: string[] }> {
  if (!nodesOverlap(r.graph.nodes)) return r;
  return { graph: await arrangedByElk(r.graph), notes: [...r.notes, 'Nodes overlapped, so they were arranged automatically.'] };
}

export function downloadJson(filename: string, value: unknown): void {
  const blob = new Blob([JSON.stringify(value, null, 2) + '\n'], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function safeFileName(name: string): string {
  return (name.trim() || 'workflow').replace(/[^\w.-]+/g, '-').replace(/^-+|-+$/g, '') || 'workflow';
}
