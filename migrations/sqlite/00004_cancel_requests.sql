-- A cancel asked for by a process that does not drive the run (the CLI
-- while the server runs it): the driving process polls for it, and a
-- process that takes the run over after a crash sees it too.

-- +goose Up
ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN cancel_requested;
