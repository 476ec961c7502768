-- runs_finished's condition as comparisons instead of an IN list. SQLite
-- evaluates a partial index's condition on every insert into runs and on
-- every update of its status, and codes an IN list of three or more
-- constants as an ephemeral table built each time: opening, filling and
-- closing it was a large part of each run's insert and final update
-- (store/sqlite's TestHotStatementsBuildNoTempTables). Queries that read
-- the index name the same condition (store/sqlite's prunable).

-- +goose Up
DROP INDEX runs_finished;
CREATE INDEX runs_finished ON runs (finished_at, id)
WHERE status = 'completed' OR status = 'failed' OR status = 'cancelled';

-- +goose Down
DROP INDEX runs_finished;
CREATE INDEX runs_finished ON runs (finished_at, id) WHERE status IN ('completed', 'failed', 'cancelled');
