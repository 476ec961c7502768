-- Retention (serve --keep-runs, switchyard prune) deletes finished runs
-- oldest first: runs_finished reads them in that order, and only finished
-- runs are in it. A finished run stored without its finish time gets its
-- last update's. Databases made from now on also return freed pages to
-- the file system (auto_vacuum = INCREMENTAL, set by store/sqlite before
-- the first table is made; older files get it from `switchyard prune
-- --vacuum`).

-- +goose Up
UPDATE runs SET finished_at = updated_at
WHERE finished_at IS NULL AND status IN ('completed', 'failed', 'cancelled');
CREATE INDEX runs_finished ON runs (finished_at, id) WHERE status IN ('completed', 'failed', 'cancelled');

-- +goose Down
DROP INDEX runs_finished;
