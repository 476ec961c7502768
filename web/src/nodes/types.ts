import type { EdgeTypes, NodeTypes } from '@xyflow/react';
import { ExecEdge, SubagentEdge } from './edges';
import { GROUP_NODE_TYPE } from '../graph/groups';
import { AgentNode, ApprovalNode, IfNode, IncludeGroupNode, StartNode, YamlNode } from './nodes';

// Module-level constants: React Flow re-mounts every node if these objects
// change identity between renders.
export const nodeTypes: NodeTypes = {
  start: StartNode,
  agent: AgentNode,
  if: IfNode,
  approval: ApprovalNode,
  yaml: YamlNode,
  [GROUP_NODE_TYPE]: IncludeGroupNode,
};

export const edgeTypes: EdgeTypes = {
  exec: ExecEdge,
  subagent: SubagentEdge,
};
