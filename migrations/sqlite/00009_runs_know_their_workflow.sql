-- Runs know their workflow, YAML runs too: workflow_id holds a saved
-- workflow's id or a YAML file's (yaml.<escaped path>), so the runs of any
-- workflow are one indexed query (runs_workflow_created). The foreign key
-- to workflows goes, as YAML workflows are files, not rows; deleting a
-- saved workflow still clears its runs' workflow id (DeleteWorkflow does
-- what ON DELETE SET NULL did). SQLite cannot drop a constraint, so the
-- table is rebuilt the way its documentation describes (foreign keys off,
-- copy, drop, rename, in one transaction); a crash before goose records
-- the version only repeats the copy, which leaves the same table.
--
-- YAML runs stored before this (or started by `switchyard run`) have no
-- workflow id: only the server knows its workflows folder, so it names
-- them (store.Store.NameRuns), finding them through runs_unnamed; a run it
-- cannot name gets '' and leaves that index.

-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE runs_new (
    id                TEXT    NOT NULL PRIMARY KEY,
    workflow_id       TEXT, -- a saved workflow's id or a YAML file's; '' or NULL: none
    kind              TEXT    NOT NULL,
    status            TEXT    NOT NULL,
    input             TEXT    NOT NULL DEFAULT '',
    waiting_for_input INTEGER NOT NULL DEFAULT 0,
    current_node_id   TEXT    NOT NULL DEFAULT '',
    pending_approvals TEXT    NOT NULL DEFAULT 'null', -- JSON array
    error             TEXT    NOT NULL DEFAULT '',
    work_dir          TEXT    NOT NULL DEFAULT '',
    owner             TEXT    NOT NULL DEFAULT '', -- '' = nobody drives the run
    lease_until       INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    finished_at       INTEGER,
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    cost_usd          REAL
) STRICT;
INSERT INTO runs_new (id, workflow_id, kind, status, input, waiting_for_input, current_node_id,
    pending_approvals, error, work_dir, owner, lease_until, created_at, updated_at, finished_at,
    cancel_requested, prompt_tokens, completion_tokens, total_tokens, cost_usd)
SELECT id, workflow_id, kind, status, input, waiting_for_input, current_node_id,
    pending_approvals, error, work_dir, owner, lease_until, created_at, updated_at, finished_at,
    cancel_requested, prompt_tokens, completion_tokens, total_tokens, cost_usd FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_status_created ON runs (status, created_at);
CREATE INDEX runs_workflow_created ON runs (workflow_id, created_at);
CREATE INDEX runs_created ON runs (created_at);
CREATE INDEX runs_owner ON runs (owner) WHERE owner <> '';
CREATE INDEX runs_unnamed ON runs (created_at) WHERE workflow_id IS NULL AND kind = 'yaml';
COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE runs_old (
    id                TEXT    NOT NULL PRIMARY KEY,
    workflow_id       TEXT    REFERENCES workflows (id) ON DELETE SET NULL,
    kind              TEXT    NOT NULL,
    status            TEXT    NOT NULL,
    input             TEXT    NOT NULL DEFAULT '',
    waiting_for_input INTEGER NOT NULL DEFAULT 0,
    current_node_id   TEXT    NOT NULL DEFAULT '',
    pending_approvals TEXT    NOT NULL DEFAULT 'null',
    error             TEXT    NOT NULL DEFAULT '',
    work_dir          TEXT    NOT NULL DEFAULT '',
    owner             TEXT    NOT NULL DEFAULT '',
    lease_until       INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    finished_at       INTEGER,
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    cost_usd          REAL
) STRICT;
-- Workflow ids that name no saved workflow (YAML files) cannot stay.
INSERT INTO runs_old (id, workflow_id, kind, status, input, waiting_for_input, current_node_id,
    pending_approvals, error, work_dir, owner, lease_until, created_at, updated_at, finished_at,
    cancel_requested, prompt_tokens, completion_tokens, total_tokens, cost_usd)
SELECT id, (SELECT w.id FROM workflows w WHERE w.id = runs.workflow_id), kind, status, input,
    waiting_for_input, current_node_id, pending_approvals, error, work_dir, owner, lease_until,
    created_at, updated_at, finished_at, cancel_requested, prompt_tokens, completion_tokens,
    total_tokens, cost_usd FROM runs;
DROP TABLE runs;
ALTER TABLE runs_old RENAME TO runs;
CREATE INDEX runs_status_created ON runs (status, created_at);
CREATE INDEX runs_workflow_created ON runs (workflow_id, created_at);
CREATE INDEX runs_created ON runs (created_at);
CREATE INDEX runs_owner ON runs (owner) WHERE owner <> '';
COMMIT;
PRAGMA foreign_keys = ON;
