-- Runs know their workflow, YAML runs too (SQLite's 00009): workflow_id
-- holds a saved workflow's id or a YAML file's, without the foreign key
-- (YAML workflows are files, not rows; DeleteWorkflow clears its runs'
-- ids as ON DELETE SET NULL did). YAML runs stored without one are named
-- by the server (store.Store.NameRuns), found through runs_unnamed.

-- +goose Up
ALTER TABLE runs DROP CONSTRAINT runs_workflow_id_fkey;
CREATE INDEX runs_unnamed ON runs (created_at) WHERE workflow_id IS NULL AND kind = 'yaml';

-- +goose Down
DROP INDEX runs_unnamed;
UPDATE runs SET workflow_id = NULL
WHERE workflow_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM workflows w WHERE w.id = runs.workflow_id);
ALTER TABLE runs ADD CONSTRAINT runs_workflow_id_fkey
    FOREIGN KEY (workflow_id) REFERENCES workflows (id) ON DELETE SET NULL;
