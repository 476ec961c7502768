-- A run_events row may hold several consecutive events of one run: the
-- SQLite writer packs the events of a run that reach one commit together
-- into one row, since each row costs about as much to insert as its
-- payload and the single writer is what bounds throughput. The row's own
-- columns are its first event (seq is that event's); n counts its events;
-- more holds events seq+1 .. seq+n-1 in store/sqlite's binary form (NULL
-- when n = 1). PostgreSQL keeps one row per event.

-- +goose Up
ALTER TABLE run_events ADD COLUMN n INTEGER NOT NULL DEFAULT 1 CHECK (n >= 1);
ALTER TABLE run_events ADD COLUMN more BLOB;

-- +goose Down
-- SQL cannot unpack a pack, and an older binary would read only each
-- pack's first event: going down is refused (a CHECK failure) while any
-- row holds more than one event.
CREATE TEMP TABLE event_packs_down (packs INTEGER CHECK (packs = 0));
INSERT INTO event_packs_down SELECT count(*) FROM run_events WHERE n > 1;
DROP TABLE event_packs_down;
ALTER TABLE run_events DROP COLUMN more;
ALTER TABLE run_events DROP COLUMN n;
