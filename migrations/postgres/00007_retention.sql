-- Retention deletes finished runs oldest first (SQLite's 00011):
-- runs_finished reads them in that order, and only finished runs are in it.

-- +goose Up
UPDATE runs SET finished_at = updated_at
WHERE finished_at IS NULL AND status IN ('completed', 'failed', 'cancelled');
CREATE INDEX runs_finished ON runs (finished_at, id) WHERE status IN ('completed', 'failed', 'cancelled');

-- +goose Down
DROP INDEX runs_finished;
