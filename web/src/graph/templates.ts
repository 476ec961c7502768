import leadSubagents from './templates/lead-subagents.json';
import reviewLoop from './templates/review-loop.json';
import router from './templates/router.json';
import reviewDag from './templates/review-dag.yaml?raw';
import starter from './templates/starter.json';
import { parseGraph } from './serialize';
import type { Graph } from './types';

/**
 * A starting point offered in the editor's template gallery. Graph templates
 * open as a new unsaved workflow. YAML workflows only come from the server's
 * --workflows folder, so the YAML template is text to copy into a file there.
 * The server's tests validate every file in ./templates (TestUITemplatesValidate).
 */
export type Template =
  | { id: string; kind: 'graph'; name: string; description: string; graph: Graph }
  | { id: string; kind: 'yaml'; name: string; description: string; fileName: string; yaml: string };

export const TEMPLATES: readonly Template[] = [
  {
    id: 'review-loop',
    kind: 'graph',
    name: 'Write, review, publish',
    description:
      'A writer drafts, a person approves or rejects with a note; a rejection goes back to the writer ($REJECTION_REASON), an approval to the publisher.',
    graph: parseGraph(reviewLoop),
  },
  {
    id: 'router',
    kind: 'graph',
    name: 'Router',
    description: 'A triage agent classifies the input; an if node sends bugs, feature requests and everything else to different agents.',
    graph: parseGraph(router),
  },
  {
    id: 'lead-subagents',
    kind: 'graph',
    name: 'Lead with subagents',
    description: 'A lead agent calls a researcher and a critic as tools (dashed subagent edges), then hands its answer to an editor.',
    graph: parseGraph(leadSubagents),
  },
  {
    id: 'yaml-review',
    kind: 'yaml',
    name: 'YAML DAG: review a change',
    description: 'Two reviews run in parallel, a summary waits for both, then a person signs off. A YAML workflow is a file in the server’s workflows folder: edit it on the canvas, in the step inspector or as text.',
    fileName: 'review-change.yaml',
    yaml: reviewDag,
  },
];

const STARTER = parseGraph(starter);

/** What a new workflow opens with: a start node already wired to an agent. */
export function starterGraph(): Graph {
  return structuredClone(STARTER);
}

/** A deep copy, so editing an opened template never changes the gallery's. */
export function cloneGraph(g: Graph): Graph {
  return structuredClone(g);
}
