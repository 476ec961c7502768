// Words for writes to a YAML file: undo button titles and the toasts of
// destructive canvas gestures ("Deleted step fetch; b and c no longer
// wait for it").
import type { YamlEdit } from '../api/types';

/** "a", "a and b", "a, b and c" (at most `max` names, then "and N more"). */
export function nameList(names: readonly string[], max = 4): string {
  if (names.length === 0) return '';
  if (names.length > max) return `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
  if (names.length === 1) return names[0]!;
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/** A short label for a list of edits (an undo step's name). */
export function describeEdits(edits: readonly YamlEdit[]): string {
  if (edits.length === 1) {
    const e = edits[0]!;
    switch (e.op) {
      case 'set':
        return e.value === null ? `Remove ${e.field} of ${e.node}` : `Change ${e.field} of ${e.node}`;
      case 'unset':
        return `Remove ${e.field} of ${e.node}`;
      case 'addNode':
        return `Add step ${e.node}`;
      case 'deleteNode':
        return `Delete step ${e.node}`;
      case 'addDependency':
        return `Connect ${e.dependency} → ${e.node}`;
      case 'removeDependency':
        return `Disconnect ${e.dependency} → ${e.node}`;
      case 'renameNode':
        return `Rename ${e.node} to ${e.newId}`;
    }
  }
  const nodes = [...new Set(edits.map((e) => e.node).filter(Boolean))];
  return nodes.length === 1 ? `Change ${edits.length} fields of ${nodes[0]}` : `${edits.length} changes`;
}

type Sel = { id: string; selected?: boolean };
type SelEdge = { source: string; target: string; selected?: boolean };

/**
 * What deleting the selection does to the file, as an undo label and a
 * toast: the steps that go, and the steps that no longer wait for them
 * (their depends_on loses the entry), or the dependencies removed.
 */
export function describeDeletion(nodes: readonly Sel[], edges: readonly SelEdge[]): { label: string; message: string } {
  const gone = nodes.filter((n) => n.selected).map((n) => n.id);
  const goneSet = new Set(gone);
  const links = edges.filter((e) => e.selected && !goneSet.has(e.source) && !goneSet.has(e.target));
  const waiting = [...new Set(edges.filter((e) => goneSet.has(e.source) && !goneSet.has(e.target)).map((e) => e.target))];
  const parts: string[] = [];
  let label: string;
  if (gone.length > 0) {
    label = gone.length === 1 ? `Delete step ${gone[0]}` : `Delete ${gone.length} steps`;
    parts.push(gone.length === 1 ? `Deleted step ${gone[0]}` : `Deleted ${gone.length} steps (${nameList(gone)})`);
    if (waiting.length) {
      parts.push(`${nameList(waiting)} no longer wait${waiting.length === 1 ? 's' : ''} for ${gone.length === 1 ? 'it' : 'them'}`);
    }
  } else {
    label = links.length === 1 ? `Disconnect ${links[0]!.source} → ${links[0]!.target}` : `Remove ${links.length} dependencies`;
  }
  if (links.length) {
    const what = links.map((e) => `${e.source} → ${e.target}`);
    parts.push(`${gone.length ? 'removed' : 'Removed'} the dependenc${links.length === 1 ? 'y' : 'ies'} ${nameList(what)}`);
  }
  return { label, message: `${parts.join('; ')}.` };
}
