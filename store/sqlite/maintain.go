package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/internal/commit"
)

// namePage is how many runs NameRuns names per write: a short hold of the
// writer, between which other writes go ahead.
const namePage = 200

// sqlUnnamedRuns reads off the partial index runs_unnamed (migration 9):
// it holds only YAML runs never looked at, so with none it costs nothing.
const sqlUnnamedRuns = `SELECT ` + runColumns + ` FROM runs
WHERE workflow_id IS NULL AND kind = 'yaml' ORDER BY created_at LIMIT ?`

// NameRuns implements store.Store.
func (s *Store) NameRuns(ctx context.Context, name func(r *engine.Run) string, limit int) (int, error) {
	done := 0
	for limit <= 0 || done < limit {
		page := namePage
		if limit > 0 {
			page = min(page, limit-done)
		}
		runs, err := s.queryRuns(ctx, sqlUnnamedRuns, page)
		if err != nil {
			return done, fmt.Errorf("store: name runs: %w", err)
		}
		if len(runs) == 0 {
			break
		}
		names := make([]string, len(runs))
		for i, r := range runs {
			names[i] = name(r)
		}
		err = s.w.do(ctx, nil, func(t *wtx) error {
			for i, r := range runs {
				// '' when unnamed: the run leaves runs_unnamed.
				if _, err := t.exec(`UPDATE runs SET workflow_id = ? WHERE id = ? AND workflow_id IS NULL`,
					names[i], r.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return done, fmt.Errorf("store: name runs: %w", err)
		}
		done += len(runs)
		if len(runs) < page {
			break
		}
	}
	return done, nil
}

// --- retention ---

// prunable is the condition of the partial index runs_finished
// (migrations 11 and 13): the runs retention may delete. Written as the
// index's is, comparisons in parentheses, so the planner can prove the
// index applies.
const prunable = `(status = 'completed' OR status = 'failed' OR status = 'cancelled')`

// The runs a prune selects: finished before the cut, in (finished_at, id)
// order. sqlPruneKeep finds the Keep-th run that finished last. INDEXED
// BY: the planner may not know that runs_finished holds only finished
// runs, and pick the status index and a sort of every finished run.
const (
	sqlPruneKeep = `SELECT finished_at, id FROM runs INDEXED BY runs_finished WHERE ` + prunable + `
ORDER BY finished_at DESC, id DESC LIMIT 1 OFFSET ?`
	sqlPruneBatch = `SELECT id, definition_hash FROM runs INDEXED BY runs_finished WHERE ` + prunable + `
AND (finished_at < ?1 OR (finished_at = ?1 AND id < ?2)) ORDER BY finished_at, id LIMIT ?3`
	sqlPruneCount = `SELECT count(*), coalesce(sum((SELECT sum(n) FROM run_events e WHERE e.run_id = r.id)), 0)
FROM runs r INDEXED BY runs_finished WHERE ` + prunable + ` AND (finished_at < ?1 OR (finished_at = ?1 AND id < ?2))`
)

// pruneCut is where p's selection ends: every finished run before
// (at, id) in (finished_at, id) order. ok is false when p selects none.
func (s *Store) pruneCut(ctx context.Context, p store.Prune) (at int64, id string, ok bool, err error) {
	if !p.Before.IsZero() {
		at, ok = toMicros(p.Before), true
	}
	if p.Keep > 0 {
		var kt int64
		var kid string
		err := s.rd().QueryRowContext(ctx, sqlPruneKeep, p.Keep-1).Scan(&kt, &kid)
		switch {
		case errors.Is(err, sql.ErrNoRows): // Keep or fewer finished runs: none to delete for the count
		case err != nil:
			return 0, "", false, err
		case !ok || kt > at || (kt == at && kid > id):
			at, id, ok = kt, kid, true
		}
	}
	if st := toMicros(p.Settled); ok && !p.Settled.IsZero() && (at > st || (at == st && id != "")) {
		at, id = st, ""
	}
	return at, id, ok, nil
}

// PruneRuns implements store.Pruner.
func (s *Store) PruneRuns(ctx context.Context, p store.Prune) (store.Pruned, error) {
	at, id, ok, err := s.pruneCut(ctx, p)
	if err != nil || !ok {
		return store.Pruned{}, wrapPrune(err)
	}
	if p.DryRun {
		var got store.Pruned
		err := s.rd().QueryRowContext(ctx, sqlPruneCount, at, id).Scan(&got.Runs, &got.Events)
		return got, wrapPrune(err)
	}
	size := commit.PruneBatchSize(p)
	got, err := commit.PruneBatches(ctx, size, p.Pause, func() (store.Pruned, error) {
		return s.pruneBatch(ctx, at, id, size)
	})
	if err != nil {
		return got, wrapPrune(err)
	}
	got.FreedBytes, err = s.reclaim(ctx)
	return got, wrapPrune(err)
}

func wrapPrune(err error) error {
	if err != nil {
		return fmt.Errorf("store: prune runs: %w", err)
	}
	return nil
}

// pruneBatch deletes up to size of the selected runs, their node states
// and events, and the definitions no run references any more, in one
// transaction on the writer connection (not in the queue's batches: a
// failure here fails nothing else).
func (s *Store) pruneBatch(ctx context.Context, at int64, cutID string, size int) (store.Pruned, error) {
	var got store.Pruned
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		// Before the commit: the writer's next batch, which waits for
		// this transaction, forgets what it knew of the runs deleted.
		s.w.runsDeleted.Add(1)
		got = store.Pruned{}
		rows, err := tx.QueryContext(ctx, sqlPruneBatch, at, cutID, size)
		if err != nil {
			return err
		}
		var ids []string
		hashes := map[string]bool{}
		for rows.Next() {
			var id string
			var hash []byte
			if err := rows.Scan(&id, &hash); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			if hash != nil {
				hashes[string(hash)] = true
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			var n int64 // events, not rows: a row may hold several
			if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM run_events WHERE run_id = ?`, id).Scan(&n); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM run_events WHERE run_id = ?`, id); err != nil {
				return err
			}
			got.Events += n
			if _, err := tx.ExecContext(ctx, `DELETE FROM node_states WHERE run_id = ?`, id); err != nil {
				return err
			}
			n, err = execCount(ctx, tx, `DELETE FROM runs WHERE id = ? AND `+prunable, id)
			if err != nil {
				return err
			}
			got.Runs += n
		}
		if len(hashes) > 0 {
			// Before the commit: no batch after it may take a
			// definition deleted here for stored.
			s.w.forgetDefs()
		}
		for h := range hashes {
			n, err := execCount(ctx, tx, `DELETE FROM definitions WHERE hash = ?1
AND NOT EXISTS (SELECT 1 FROM runs WHERE definition_hash = ?1)`, []byte(h))
			if err != nil {
				return err
			}
			got.Definitions += n
		}
		return nil
	})
	return got, err
}

func execCount(ctx context.Context, tx *sql.Tx, q string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// vacuumStep is how many free pages one incremental vacuum write returns
// (4 MiB of 4 KiB pages): a short hold of the writer connection.
const vacuumStep = 1024

// reclaim returns the free pages to the file system, a step at a time,
// when the database vacuums incrementally, and returns the bytes freed.
func (s *Store) reclaim(ctx context.Context) (int64, error) {
	var mode int64
	if err := s.rd().QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 2 {
		return 0, err // 2: INCREMENTAL
	}
	size := func() (int64, error) {
		var pages, pageSize int64
		err := s.rd().QueryRowContext(ctx, `SELECT * FROM pragma_page_count, pragma_page_size`).Scan(&pages, &pageSize)
		return pages * pageSize, err
	}
	before, err := size()
	if err != nil {
		return 0, err
	}
	last := int64(-1)
	for {
		var free int64
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			if err := tx.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil || free == 0 {
				return err
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, vacuumStep))
			return err
		})
		if err != nil {
			return 0, err
		}
		if free == 0 || free == last { // nothing more it can free
			break
		}
		last = free
	}
	after, err := size()
	return before - after, err
}

// VacuumFile rebuilds the database file at path (VACUUM) so that it
// returns the pages retention frees to the file system from now on
// (auto_vacuum = INCREMENTAL), as databases made since migration 11 do:
// for older files, once. Nothing else may have the database open (stop
// serve first): SQLite changes a file's vacuum mode only outside WAL
// mode, which needs the file to itself. It needs free disk space of about
// the file's size.
func VacuumFile(ctx context.Context, path string) error {
	if err := CheckDatabase(ctx, path); err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("store: vacuum: %w", err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs),
		RawQuery: url.Values{"_pragma": {"busy_timeout(1000)"}}.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return fmt.Errorf("store: vacuum %s: %w", abs, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var mode string
	err = db.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode)
	var se *sqlitedrv.Error
	if (errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY) || (err == nil && mode != "delete") {
		return fmt.Errorf("store: vacuum %s: the database is in use by another process (stop it first)", abs)
	}
	if err != nil {
		return fmt.Errorf("store: vacuum %s: %w", abs, err)
	}
	for _, q := range []string{`PRAGMA auto_vacuum = INCREMENTAL`, `VACUUM`, `PRAGMA journal_mode = WAL`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("store: vacuum %s: %s: %w", abs, q, storageErr(err))
		}
	}
	return nil
}
