-- Initial schema. Timestamps are INTEGER unix microseconds (UTC); JSON is
-- stored as TEXT. Tables are STRICT so a wrongly typed value is an error
-- instead of being silently coerced.

-- +goose Up
CREATE TABLE workflows (
    id          TEXT    NOT NULL PRIMARY KEY,
    name        TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    kind        TEXT    NOT NULL CHECK (kind IN ('graph', 'yaml')),
    definition  TEXT    NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;

-- Every saved version of a workflow is kept, the current one included.
CREATE TABLE workflow_versions (
    workflow_id TEXT    NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    name        TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    kind        TEXT    NOT NULL,
    definition  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (workflow_id, version)
) STRICT, WITHOUT ROWID;

CREATE TABLE runs (
    id                TEXT    NOT NULL PRIMARY KEY,
    -- Deleting a workflow keeps its runs (they carry their own definition).
    workflow_id       TEXT    REFERENCES workflows (id) ON DELETE SET NULL,
    kind              TEXT    NOT NULL,
    definition        TEXT    NOT NULL, -- snapshot taken when the run was created
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
    finished_at       INTEGER
) STRICT;

CREATE INDEX runs_status ON runs (status);
CREATE INDEX runs_workflow_created ON runs (workflow_id, created_at);
CREATE INDEX runs_created ON runs (created_at);
-- RenewLeases updates every run of one owner; most runs have none.
CREATE INDEX runs_owner ON runs (owner) WHERE owner <> '';

-- Clustered by (run_id, seq): a run's log is one contiguous range.
CREATE TABLE run_events (
    run_id  TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    node_id TEXT    NOT NULL,
    type    TEXT    NOT NULL,
    content TEXT    NOT NULL,
    ts      INTEGER NOT NULL,
    data    TEXT, -- JSON, NULL when absent
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

-- A rowid table on purpose: LoadRun returns nodes in the order first stored.
CREATE TABLE node_states (
    run_id      TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    node_id     TEXT    NOT NULL,
    status      TEXT    NOT NULL DEFAULT '',
    input       TEXT    NOT NULL DEFAULT '',
    output      TEXT    NOT NULL DEFAULT '',
    handle      TEXT    NOT NULL DEFAULT '',
    error       TEXT    NOT NULL DEFAULT '',
    visits      INTEGER NOT NULL DEFAULT 0,
    attempts    INTEGER NOT NULL DEFAULT 0,
    fired       TEXT, -- JSON array of edge ids, NULL when none
    wait        TEXT, -- executor's JSON state while waiting, NULL when none
    started_at  INTEGER,
    finished_at INTEGER,
    PRIMARY KEY (run_id, node_id)
) STRICT;

-- +goose Down
DROP TABLE node_states;
DROP TABLE run_events;
DROP TABLE runs;
DROP TABLE workflow_versions;
DROP TABLE workflows;
