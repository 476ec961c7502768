import { conditionHandleId, conditionIndex } from './handles';
import { conditionsOf, type FlowEdge, type IfCondition, type NodeData } from './types';

/**
 * Edits to an if-node's condition list. Edges hang off `condition-<i>`
 * handles, so removing or moving a condition must move its edges too, or a
 * branch would silently change meaning.
 */
export type ConditionEdit =
  | { kind: 'add'; condition?: IfCondition }
  | { kind: 'remove'; index: number }
  | { kind: 'move'; from: number; to: number }
  | { kind: 'update'; index: number; patch: Partial<IfCondition> };

export function applyConditionEdit(
  nodeId: string,
  data: NodeData,
  edges: readonly FlowEdge[],
  edit: ConditionEdit,
): { data: NodeData; edges: FlowEdge[] } {
  const conds = conditionsOf(data);
  // mapping[i] = new index of old condition i, or -1 when it goes away.
  let mapping: number[] = conds.map((_, i) => i);
  let next = conds;
  switch (edit.kind) {
    case 'add':
      next = [...conds, edit.condition ?? { operator: 'equal', value: '' }];
      break;
    case 'remove':
      if (edit.index < 0 || edit.index >= conds.length) return { data, edges: [...edges] };
      next = conds.filter((_, i) => i !== edit.index);
      mapping = conds.map((_, i) => (i === edit.index ? -1 : i > edit.index ? i - 1 : i));
      break;
    case 'move': {
      const { from, to } = edit;
      if (from === to || from < 0 || to < 0 || from >= conds.length || to >= conds.length)
        return { data, edges: [...edges] };
      const order = conds.map((_, i) => i);
      const [moved] = order.splice(from, 1);
      order.splice(to, 0, moved!);
      next = order.map((i) => conds[i]!);
      mapping = new Array<number>(conds.length);
      order.forEach((oldIdx, newIdx) => (mapping[oldIdx] = newIdx));
      break;
    }
    case 'update':
      next = conds.map((c, i) => (i === edit.index ? { ...c, ...edit.patch } : c));
      break;
  }
  const outEdges: FlowEdge[] = [];
  for (const e of edges) {
    const ci = e.source === nodeId ? conditionIndex(e.sourceHandle) : -1;
    if (ci < 0) {
      outEdges.push(e);
      continue;
    }
    const ni = mapping[ci];
    if (ni === undefined || ni < 0) continue; // its condition was removed
    outEdges.push(ni === ci ? e : { ...e, sourceHandle: conditionHandleId(ni) });
  }
  return { data: { ...data, conditions: next }, edges: outEdges };
}
