-- run_events rows are stored in the order they are written (a rowid
-- table), found by run through an index on (run_id, seq), instead of
-- being kept in (run_id, seq) order themselves (WITHOUT ROWID). The runs
-- in flight write their events at once, each at its own place in that
-- order, so each commit of the single writer rewrote a page per run or so
-- of run_events (17 of the 42 pages a commit wrote in `switchyard load
-- runs`); appended in order, a commit's events fill the last pages, and
-- only the index's small entries land across the runs in flight.

-- +goose Up
CREATE TABLE run_events_in_order (
    id      INTEGER PRIMARY KEY,
    run_id  TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    node_id TEXT    NOT NULL,
    type    TEXT    NOT NULL,
    content TEXT    NOT NULL,
    ts      INTEGER NOT NULL,
    data    TEXT, -- JSON, NULL when absent
    n       INTEGER NOT NULL DEFAULT 1 CHECK (n >= 1),
    more    BLOB
) STRICT;
INSERT INTO run_events_in_order (run_id, seq, node_id, type, content, ts, data, n, more)
SELECT run_id, seq, node_id, type, content, ts, data, n, more FROM run_events ORDER BY run_id, seq;
DROP TABLE run_events;
ALTER TABLE run_events_in_order RENAME TO run_events;
CREATE UNIQUE INDEX run_events_run_seq ON run_events (run_id, seq);

-- +goose Down
CREATE TABLE run_events_by_run (
    run_id  TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    node_id TEXT    NOT NULL,
    type    TEXT    NOT NULL,
    content TEXT    NOT NULL,
    ts      INTEGER NOT NULL,
    data    TEXT, -- JSON, NULL when absent
    n       INTEGER NOT NULL DEFAULT 1 CHECK (n >= 1),
    more    BLOB,
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;
INSERT INTO run_events_by_run (run_id, seq, node_id, type, content, ts, data, n, more)
SELECT run_id, seq, node_id, type, content, ts, data, n, more FROM run_events;
DROP TABLE run_events;
ALTER TABLE run_events_by_run RENAME TO run_events;
