-- Definitions are stored once (SQLite's 00010): a run references its
-- definition by content hash (sha256 of its bytes), and runs of the same
-- graph or YAML file share one row. The foreign key is deferred: CreateRun
-- inserts the run first, then its definition; a definition retention
-- removes while another process creates a run of it fails that commit,
-- whose batch runs again op by op and stores the definition anew.

-- +goose Up
CREATE TABLE definitions (
    hash       BYTEA NOT NULL PRIMARY KEY, -- sha256 of definition
    definition TEXT  NOT NULL
);
INSERT INTO definitions (hash, definition)
SELECT DISTINCT ON (h) h, definition
FROM (SELECT sha256(convert_to(definition, 'UTF8')) AS h, definition FROM run_definitions WHERE definition <> '') d;
ALTER TABLE runs ADD COLUMN definition_hash BYTEA;
UPDATE runs r SET definition_hash = sha256(convert_to(d.definition, 'UTF8'))
FROM run_definitions d WHERE d.run_id = r.id AND d.definition <> '';
DROP TABLE run_definitions;
-- Retention drops a definition once no run references it.
CREATE INDEX runs_definition ON runs (definition_hash);
-- Added last: a deferred key checked by the UPDATE above would leave
-- trigger events pending, which CREATE INDEX refuses.
ALTER TABLE runs ADD CONSTRAINT runs_definition_hash_fkey
    FOREIGN KEY (definition_hash) REFERENCES definitions (hash) DEFERRABLE INITIALLY DEFERRED;

-- +goose Down
CREATE TABLE run_definitions (
    run_id     TEXT NOT NULL PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    definition TEXT NOT NULL
);
INSERT INTO run_definitions (run_id, definition)
SELECT r.id, coalesce(d.definition, '') FROM runs r LEFT JOIN definitions d ON d.hash = r.definition_hash;
DROP INDEX runs_definition;
ALTER TABLE runs DROP COLUMN definition_hash;
DROP TABLE definitions;
