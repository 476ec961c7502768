import type { EditableNodeType, NodeData } from './types';

export const PALETTE: ReadonlyArray<{ type: EditableNodeType; label: string; hint: string }> = [
  { type: 'start', label: 'Start', hint: 'Entry point with the initial input' },
  { type: 'agent', label: 'Agent', hint: 'Calls a model with prompts and tools' },
  { type: 'if', label: 'If', hint: 'Routes by conditions on the previous output' },
  { type: 'approval', label: 'Approval', hint: 'Pauses until a person approves or rejects' },
];

export function defaultData(type: EditableNodeType, ordinal = 1): NodeData {
  switch (type) {
    case 'start':
      return { initialInput: '' };
    case 'agent':
      return {
        agentName: `Agent ${ordinal}`,
        systemPrompt: '',
        userPrompt: '{{PREVIOUS_OUTPUT}}',
        tools: { web_search: false, subagents: false },
      };
    case 'if':
      return { conditions: [{ operator: 'contains', value: '' }] };
    case 'approval':
      return { prompt: 'Approve this output?' };
  }
}
