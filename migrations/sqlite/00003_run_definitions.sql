-- A run's definition moves to a table of its own: it is written once and
-- never changed. In the runs row every status update rewrote it (SQLite
-- writes a whole record again, overflow pages included), which for a large
-- graph cost far more than the update itself.

-- +goose Up
CREATE TABLE run_definitions (
    run_id     TEXT NOT NULL PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    definition TEXT NOT NULL
) STRICT;

INSERT INTO run_definitions (run_id, definition) SELECT id, definition FROM runs;
ALTER TABLE runs DROP COLUMN definition;

-- +goose Down
ALTER TABLE runs ADD COLUMN definition TEXT NOT NULL DEFAULT '';
UPDATE runs SET definition = coalesce((SELECT definition FROM run_definitions WHERE run_id = runs.id), '');
DROP TABLE run_definitions;
