import {
  APPROVE_HANDLE,
  FALSE_HANDLE,
  INPUT_HANDLE,
  OUTPUT_HANDLE,
  REJECT_HANDLE,
  SUBAGENT_HANDLE,
  conditionsOf,
  subagentsOn,
  type IfCondition,
  type NodeData,
} from './types';

export type HandleSpec = { id: string; label: string; kind: 'exec' | 'subagent' };

const MAX_LABEL = 24;

function clip(s: string): string {
  return s.length > MAX_LABEL ? `${s.slice(0, MAX_LABEL - 1)}…` : s;
}

/** Short human label for an if-condition, e.g. `= "yes"` or `contains "fail"`. */
export function conditionLabel(c: IfCondition): string {
  const v = c.value === '' ? '(empty)' : `"${clip(c.value)}"`;
  return c.operator === 'contains' ? `contains ${v}` : `= ${v}`;
}

export function conditionHandleId(i: number): string {
  return `condition-${i}`;
}

/** Returns the condition index of a `condition-<i>` handle id, or -1. */
export function conditionIndex(handle: string | null | undefined): number {
  const m = /^condition-(\d+)$/.exec(handle ?? '');
  return m ? Number(m[1]) : -1;
}

/** Output handles a node exposes, in display order. */
export function sourceHandles(n: { type?: string; data: NodeData }): HandleSpec[] {
  switch (n.type) {
    case 'start':
      return [{ id: OUTPUT_HANDLE, label: 'output', kind: 'exec' }];
    case 'agent': {
      const hs: HandleSpec[] = [{ id: OUTPUT_HANDLE, label: 'output', kind: 'exec' }];
      if (subagentsOn(n)) hs.push({ id: SUBAGENT_HANDLE, label: 'subagents', kind: 'subagent' });
      return hs;
    }
    case 'if': {
      const hs: HandleSpec[] = conditionsOf(n.data).map((c, i) => ({
        id: conditionHandleId(i),
        label: conditionLabel(c),
        kind: 'exec' as const,
      }));
      hs.push({ id: FALSE_HANDLE, label: 'else', kind: 'exec' });
      return hs;
    }
    case 'approval':
      return [
        { id: APPROVE_HANDLE, label: 'approve', kind: 'exec' },
        { id: REJECT_HANDLE, label: 'reject', kind: 'exec' },
      ];
    default:
      // YAML projection nodes: one generic output.
      return [{ id: OUTPUT_HANDLE, label: 'output', kind: 'exec' }];
  }
}

export function hasInputHandle(n: { type?: string }): boolean {
  return n.type !== 'start';
}

export function hasSourceHandle(n: { type?: string; data: NodeData }, handle: string | null | undefined): boolean {
  return sourceHandles(n).some((h) => h.id === handle);
}

export function isSubagentEdge(e: { sourceHandle?: string | null }): boolean {
  return e.sourceHandle === SUBAGENT_HANDLE;
}

export { INPUT_HANDLE };
