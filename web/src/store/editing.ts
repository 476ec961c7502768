// What the editor page does with the open workflow, whichever store holds
// it: a drawn graph's edits are the graph editor's (editor.ts), a YAML
// workflow's are writes to its file (yamlFile.ts).
import type { Connection } from '@xyflow/react';
import { ApiError, errorMessage } from '../api/client';
import { useApp } from './app';
import { isDirty, useEditor, type NewWorkflowOptions } from './editor';
import { isYamlDirty, useYamlFile } from './yamlFile';

const yamlOpen = () => useEditor.getState().kind === 'yaml' && useYamlFile.getState().workflowId !== null;

/** Opens a saved workflow (drawn or YAML) by id. */
export async function openWorkflow(id: string): Promise<void> {
  if (useYamlFile.getState().workflowId !== id) useYamlFile.getState().clear();
  const w = await useEditor.getState().loadWorkflow(id);
  if (!w) return;
  if (w.kind === 'yaml') useYamlFile.getState().take(w);
  else useYamlFile.getState().clear();
}

/** Opens a new unsaved drawn workflow (the starter, or a template). */
export function newWorkflow(o?: NewWorkflowOptions): void {
  useYamlFile.getState().clear();
  useEditor.getState().newWorkflow(o);
}

/** Unsaved changes the user would lose by leaving. */
export function hasUnsavedChanges(): boolean {
  const ed = useEditor.getState();
  if (ed.kind === 'yaml') {
    const y = useYamlFile.getState();
    return y.editable && isYamlDirty(y);
  }
  return isDirty(ed);
}

/** A canvas edit the server refused (e.g. a dependency cycle): say why; a conflict has its own view. */
export function reportYamlError(what: string) {
  return (e: unknown) => {
    if (e instanceof ApiError && e.conflict) return;
    useApp.getState().toast(`Could not ${what}: ${errorMessage(e)}`, 'error');
  };
}

export function connect(c: Connection): void {
  if (yamlOpen()) {
    void useYamlFile.getState().connect(c).catch(reportYamlError('connect the steps'));
    return;
  }
  useEditor.getState().connect(c);
}

export function deleteSelected(): void {
  if (yamlOpen()) {
    void useYamlFile.getState().deleteSelected().catch(reportYamlError('delete'));
    return;
  }
  useEditor.getState().deleteSelected();
}

export function undo(): void {
  if (yamlOpen()) void useYamlFile.getState().undo().catch(reportYamlError('undo'));
  else useEditor.getState().undo();
}

export function redo(): void {
  if (yamlOpen()) void useYamlFile.getState().redo().catch(reportYamlError('redo'));
  else useEditor.getState().redo();
}
