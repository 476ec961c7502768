-- The PostgreSQL schema, equivalent to the SQLite one after its migrations
-- 00001-00005. Times are timestamptz (microsecond precision, as the SQLite
-- store keeps them); JSON is TEXT, not jsonb, so that definitions, wait
-- states and event data read back byte for byte as written.

-- +goose Up
CREATE TABLE workflows (
    id          TEXT        NOT NULL PRIMARY KEY,
    name        TEXT        NOT NULL,
    description TEXT        NOT NULL DEFAULT '',
    kind        TEXT        NOT NULL CHECK (kind IN ('graph', 'yaml')),
    definition  TEXT        NOT NULL,
    version     INTEGER     NOT NULL CHECK (version >= 1),
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

-- Every saved version of a workflow is kept, the current one included.
CREATE TABLE workflow_versions (
    workflow_id TEXT        NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version     INTEGER     NOT NULL,
    name        TEXT        NOT NULL,
    description TEXT        NOT NULL DEFAULT '',
    kind        TEXT        NOT NULL,
    definition  TEXT        NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workflow_id, version)
);

CREATE TABLE runs (
    id                TEXT        NOT NULL PRIMARY KEY,
    -- Deleting a workflow keeps its runs (they carry their own definition).
    workflow_id       TEXT        REFERENCES workflows (id) ON DELETE SET NULL,
    kind              TEXT        NOT NULL,
    status            TEXT        NOT NULL,
    input             TEXT        NOT NULL DEFAULT '',
    waiting_for_input BOOLEAN     NOT NULL DEFAULT false,
    current_node_id   TEXT        NOT NULL DEFAULT '',
    pending_approvals TEXT        NOT NULL DEFAULT 'null', -- JSON array
    error             TEXT        NOT NULL DEFAULT '',
    work_dir          TEXT        NOT NULL DEFAULT '',
    owner             TEXT        NOT NULL DEFAULT '', -- '' = nobody drives the run
    -- In the database's clock (see the store's clock offset). NULL: no
    -- live lease (none taken, released, or expired at once: ExpireLeases).
    lease_until       TIMESTAMPTZ,
    cancel_requested  BOOLEAN     NOT NULL DEFAULT false,
    created_at        TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    finished_at       TIMESTAMPTZ
);

-- Runs listed by status or workflow come newest first, off the index.
CREATE INDEX runs_status_created ON runs (status, created_at);
CREATE INDEX runs_workflow_created ON runs (workflow_id, created_at);
CREATE INDEX runs_created ON runs (created_at);
-- RenewLeases updates every run of one owner; most runs have none.
CREATE INDEX runs_owner ON runs (owner) WHERE owner <> '';

-- Written once, never changed: kept out of the runs row that every
-- checkpoint rewrites (an UPDATE in PostgreSQL writes a new row version).
CREATE TABLE run_definitions (
    run_id     TEXT NOT NULL PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    definition TEXT NOT NULL
);

CREATE TABLE run_events (
    run_id  TEXT        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     BIGINT      NOT NULL,
    node_id TEXT        NOT NULL,
    type    TEXT        NOT NULL,
    content TEXT        NOT NULL,
    ts      TIMESTAMPTZ NOT NULL,
    data    TEXT, -- JSON, NULL when absent
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE node_states (
    run_id      TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    node_id     TEXT    NOT NULL,
    -- LoadRun returns nodes in the order first stored (SQLite's rowid).
    ord         BIGINT  GENERATED ALWAYS AS IDENTITY,
    status      TEXT    NOT NULL DEFAULT '',
    input       TEXT    NOT NULL DEFAULT '',
    output      TEXT    NOT NULL DEFAULT '',
    handle      TEXT    NOT NULL DEFAULT '',
    error       TEXT    NOT NULL DEFAULT '',
    visits      INTEGER NOT NULL DEFAULT 0,
    attempts    INTEGER NOT NULL DEFAULT 0,
    fired       TEXT, -- JSON array of edge ids, NULL when none
    wait        TEXT, -- executor's JSON state while waiting, NULL when none
    started_at  TIMESTAMPTZ,
    finished_at TIMESTAMPTZ,
    rejection   TEXT    NOT NULL DEFAULT '',
    decision    TEXT,   -- a claimed human decision, stored with its claim
    PRIMARY KEY (run_id, node_id)
);

-- ListOrphaned looks for paused runs with a node still running.
CREATE INDEX node_states_running ON node_states (run_id) WHERE status = 'running';

-- +goose Down
DROP TABLE node_states;
DROP TABLE run_events;
DROP TABLE run_definitions;
DROP TABLE runs;
DROP TABLE workflow_versions;
DROP TABLE workflows;
