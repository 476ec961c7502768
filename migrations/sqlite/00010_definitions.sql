-- Definitions are stored once: a run references its definition by content
-- hash (sha256 of its bytes), and runs of the same graph or YAML file
-- share one row instead of each keeping a copy (about 1.1 KB of the 4.2 KB
-- a short run cost). The foreign key is deferred: CreateRun inserts the
-- run first (so a taken id is refused before anything is written), then
-- its definition. switchyard_sha256 is registered by store/sqlite.

-- +goose Up
CREATE TABLE definitions (
    hash       BLOB NOT NULL PRIMARY KEY, -- sha256 of definition
    definition TEXT NOT NULL
) STRICT;
INSERT OR IGNORE INTO definitions (hash, definition)
SELECT switchyard_sha256(definition), definition FROM run_definitions WHERE definition <> '';
ALTER TABLE runs ADD COLUMN definition_hash BLOB REFERENCES definitions (hash) DEFERRABLE INITIALLY DEFERRED;
UPDATE runs SET definition_hash = (SELECT switchyard_sha256(d.definition) FROM run_definitions d
    WHERE d.run_id = runs.id AND d.definition <> '');
DROP TABLE run_definitions;
-- Retention drops a definition once no run references it.
CREATE INDEX runs_definition ON runs (definition_hash);

-- +goose Down
CREATE TABLE run_definitions (
    run_id     TEXT NOT NULL PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    definition TEXT NOT NULL
) STRICT;
INSERT INTO run_definitions (run_id, definition)
SELECT r.id, coalesce(d.definition, '') FROM runs r LEFT JOIN definitions d ON d.hash = r.definition_hash;
DROP INDEX runs_definition;
ALTER TABLE runs DROP COLUMN definition_hash;
DROP TABLE definitions;
