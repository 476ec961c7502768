import type { Edge, Node } from '@xyflow/react';

/** Node types the editor can create. YAML projections may carry others. */
export const EDITABLE_NODE_TYPES = ['start', 'agent', 'if', 'approval'] as const;
export type EditableNodeType = (typeof EDITABLE_NODE_TYPES)[number];

export type ConditionOperator = 'equal' | 'contains';
export const CONDITION_OPERATORS: readonly ConditionOperator[] = ['equal', 'contains'];

export type IfCondition = { operator: ConditionOperator; value: string };

export type StartData = { initialInput?: string };
export type AgentTools = {
  web_search?: boolean;
  subagents?: boolean;
  /** Built-in tools the agent may call (Read, Write, Edit, Glob, Grep, Bash, LS); none when absent. */
  builtin?: string[];
  /** Tool patterns whose calls wait for a reviewer: names, `*` globs, `Bash(git push:*)`. */
  approve?: string[];
  /** MCP servers (of `serve --mcp-config`) the agent may use, by name. */
  mcp?: string[];
};
export type AgentData = {
  agentName?: string;
  systemPrompt?: string;
  userPrompt?: string;
  model?: string;
  reasoningEffort?: string;
  tools?: AgentTools;
};
export type IfData = { conditions?: IfCondition[] };
export type ApprovalData = { prompt?: string };
/** Read-only node of a YAML workflow projection. */
export type YamlData = { label?: string; kind?: string };

/**
 * Nodes keep `data` as an open record so fields the UI does not know about
 * survive a load/save round trip untouched.
 */
export type NodeData = Record<string, unknown>;
export type FlowNode = Node<NodeData, string>;
export type FlowEdge = Edge;

/** Exactly the shape the server stores. */
export type GraphNode = {
  id: string;
  type: string;
  position: { x: number; y: number };
  data: NodeData;
};
export type GraphEdge = {
  id: string;
  source: string;
  target: string;
  sourceHandle?: string | null;
  targetHandle?: string | null;
};
export type Graph = { nodes: GraphNode[]; edges: GraphEdge[] };

export const SUBAGENT_HANDLE = 'subagent';
export const INPUT_HANDLE = 'input';
export const OUTPUT_HANDLE = 'output';
export const FALSE_HANDLE = 'false';
export const APPROVE_HANDLE = 'approve';
export const REJECT_HANDLE = 'reject';

export function isEditableType(t: string | undefined): t is EditableNodeType {
  return (EDITABLE_NODE_TYPES as readonly string[]).includes(t ?? '');
}

export function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

export function agentData(d: NodeData): AgentData {
  return d as AgentData;
}

export function conditionsOf(d: NodeData): IfCondition[] {
  const c = (d as IfData).conditions;
  if (!Array.isArray(c)) return [];
  return c.map((x) => {
    const o = (x ?? {}) as Partial<IfCondition>;
    return { operator: o.operator === 'contains' ? 'contains' : 'equal', value: str(o.value) };
  });
}

export function subagentsOn(n: { type?: string; data: NodeData }): boolean {
  return n.type === 'agent' && (n.data as AgentData).tools?.subagents === true;
}
