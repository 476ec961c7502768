import { api, ApiError } from '../api/client';
import { normalizeLegacy } from '../graph/legacy';
import { arranged, nodesOverlap } from '../graph/layout';
import { looksLegacy, parseGraph } from '../graph/serialize';
import type { Graph } from '../graph/types';

export type ImportResult = { graph: Graph; notes: string[] };

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
  if (!looksLegacy(raw)) return { graph: parseGraph(raw), notes: [] };
  try {
    const r = await api.normalize(raw);
    const notes = (Array.isArray(r.problems) ? r.problems : []).map((p) =>
      typeof p === 'string' ? p : `${p.severity}: ${p.message}`,
    );
    return untangle({ graph: parseGraph(r.graph), notes: ['Converted from the legacy format.', ...notes] });
  } catch (e) {
    if (e instanceof ApiError && e.unreachable) {
      const r = normalizeLegacy(raw);
      return untangle({ graph: r.graph, notes: ['Converted from the legacy format locally (server unreachable).', ...r.problems] });
    }
    throw e;
  }
}

/** Legacy positions were made for smaller boxes: re-arrange when nodes would overlap. */
function untangle(r: ImportResult): ImportResult {
  if (!nodesOverlap(r.graph.nodes)) return r;
  return { graph: arranged(r.graph), notes: [...r.notes, 'Nodes overlapped, so they were arranged automatically.'] };
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
