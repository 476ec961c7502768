-- Runs listed by status come newest first: with the creation time in the
-- status index, a page of them is read off the index instead of sorting
-- every run of that status.

-- +goose Up
CREATE INDEX runs_status_created ON runs (status, created_at);
DROP INDEX runs_status;

-- +goose Down
CREATE INDEX runs_status ON runs (status);
DROP INDEX runs_status_created;
