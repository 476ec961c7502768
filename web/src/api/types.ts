// API types. Those the server's OpenAPI document describes exactly come
// from schema.gen.ts, generated from it (npm run gen:api); the rest are
// the UI's narrower views of answers.
import type { Graph } from '../graph/types';
import type { components } from './schema.gen';

type Schemas = components['schemas'];

export type WorkflowKind = Schemas['Workflow']['kind'];

export type WorkflowSummary = {
  id: string;
  name: string;
  description: string;
  kind: WorkflowKind;
  version: number;
  createdAt: string;
  updatedAt: string;
  /** YAML workflows: the file's path in the workflows folder. */
  path?: string;
};

export type Workflow = WorkflowSummary & {
  graph: Graph | null;
  /** YAML workflows: why the workflow cannot run here; absent if it can. */
  runBlocker?: string;
  /** YAML workflows: the file's text, its hash (the next save's baseHash) and whether the server saves it. */
  source?: string;
  sourceHash?: string;
  editable?: boolean;
  path?: string;
  problems?: Problem[];
};

export type YamlEdit = Schemas['YAMLEdit'];
export type YamlSave = Schemas['YAMLSave'];
export type YamlConflictBody = Schemas['YAMLConflict'];
export type YamlConversion = Schemas['YAMLConversion'];
export type YamlPositions = Schemas['YAMLPositions'];
export type YamlProblem = Schemas['YAMLValidateResult']['problems'][number];
export type YamlValidateResult = Omit<Schemas['YAMLValidateResult'], 'graph'> & { graph: unknown };
export type YamlNodeKind = NonNullable<YamlEdit['kind']>;
export const YAML_KINDS: readonly YamlNodeKind[] = ['command', 'prompt', 'bash', 'script', 'loop', 'approval', 'cancel'];

export type WorkflowVersion = {
  version: number;
  createdAt?: string;
  name?: string;
  description?: string;
  graph?: Graph;
};

export type Problem = Schemas['Problem'];

export type Severity = Problem['severity'];

export type ValidateResult = Schemas['ValidateResult'];

export type RunStatus = Schemas['RunStatus'];

export const TERMINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'interrupted'];

export function isTerminal(s: string | undefined): boolean {
  return (TERMINAL_STATUSES as readonly string[]).includes(s ?? '');
}

export type PendingApproval = Schemas['PendingApproval'];

/** A node waiting for a decision, as the approvals inbox lists it. */
export type Approval = Schemas['Approval'];

/** An agent's tool call waiting for a reviewer (Approval.tool, PendingApproval.tool). */
export type ToolApproval = Schemas['ToolApproval'];

export type Run = {
  runId: string;
  workflowId?: string | null;
  status: RunStatus;
  waitingForInput?: boolean;
  currentNodeId?: string | null;
  pendingApprovals?: PendingApproval[] | null;
  outputs?: Record<string, string> | null;
  error?: string | null;
  createdAt: string;
  finishedAt?: string | null;
  graph?: unknown;
  input?: string;
  kind?: WorkflowKind;
  /** Model tokens over the run (and their cost with a price table). */
  usage?: Usage;
  /** The folder the run works in (its workspace or git worktree). */
  workDir?: string;
  /** The branch of the run's own git worktree (switchyard/<run id>). */
  branch?: string;
  /** Each node's stored state (GET /api/runs/{id}). */
  nodes?: NodeState[];
  /** The run this one was forked from ("Run from here") and the node it ran from. */
  forkOf?: ForkOf;
};

export type NodeState = Schemas['NodeState'];
export type ForkOf = NonNullable<Schemas['Run']['forkOf']>;
/** POST /api/runs/{id}/fork: the node to run from and edited upstream outputs (pinned data). */
export type ForkRequest = Schemas['ForkRun'];

export type Usage = Schemas['Usage'];

export type EventType =
  | 'step_start'
  | 'start_prompt'
  | 'llm_delta'
  | 'llm_response'
  | 'llm_error'
  | 'logic_check'
  | 'wait_input'
  | 'input_received'
  | 'step_end'
  | 'error'
  | 'warning'
  | 'run_status'
  | 'subagent_call_start'
  | 'subagent_call_end'
  | 'subagent_call_error'
  | 'llm_turn'
  | 'tool_call'
  | 'tool_result'
  | 'output'
  | 'run_forked';

export type RunEvent = {
  seq: number;
  runId: string;
  nodeId: string;
  type: EventType | string;
  content: string;
  timestamp: string;
  data?: Record<string, unknown> | null;
};

export type SubagentCallInfo = {
  parentNodeId: string;
  subagentNodeId: string;
  subagentName?: string;
  callId: string;
  parentCallId?: string;
  depth: number;
  message?: string;
};

export type AppConfig = {
  llmConfigured: boolean;
  providers: Schemas['ConfigProvider'][];
  models: string[];
  defaultModel: string;
  reasoningEfforts: string[];
  /** MCP servers of `serve --mcp-config` drawn agents may pick (absent on older servers). */
  mcpServers?: { name: string }[];
  /** The built-in tools an agent may be given (absent on older servers). */
  builtinTools?: string[];
};

/** GET /api/ws: a YAML workflow file was created, changed or deleted (on disk or through the API). */
export type WorkflowChangedMessage = Schemas['WorkflowChangedMessage'];

export type RunStatusMessage = {
  runId: string;
  status: RunStatus;
  workflowId?: string | null;
  waitingForInput?: boolean;
};
