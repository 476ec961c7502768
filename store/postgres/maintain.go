package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/internal/commit"
)

// namePage is how many runs NameRuns names per write.
const namePage = 200

// sqlUnnamedRuns reads off the partial index runs_unnamed (migration 5):
// it holds only YAML runs never looked at, so with none it costs nothing.
const sqlUnnamedRuns = `SELECT ` + runColumns + ` FROM runs
WHERE workflow_id IS NULL AND kind = 'yaml' ORDER BY created_at LIMIT $1`

// NameRuns implements store.Store. Processes naming at once write the
// same names: each update only fills a workflow id still missing.
func (s *Store) NameRuns(ctx context.Context, name func(r *engine.Run) string, limit int) (int, error) {
	done := 0
	for limit <= 0 || done < limit {
		page := namePage
		if limit > 0 {
			page = min(page, limit-done)
		}
		runs, err := s.queryRuns(ctx, sqlUnnamedRuns, page)
		if err != nil {
			return done, fmt.Errorf("postgres: name runs: %w", err)
		}
		if len(runs) == 0 {
			break
		}
		ids, names := make([]string, len(runs)), make([]string, len(runs))
		for i, r := range runs {
			ids[i], names[i] = r.ID, name(r) // '' when unnamed: the run leaves runs_unnamed
		}
		err = s.w.do(ctx, nil, func(t *wtx) error {
			_, err := t.exec(`UPDATE runs r SET workflow_id = n.name
FROM unnest($1::text[], $2::text[]) AS n(id, name) WHERE r.id = n.id AND r.workflow_id IS NULL`, ids, names)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("postgres: name runs: %w", err)
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
// (migration 7): the runs retention may delete.
const prunable = `status IN ('completed', 'failed', 'cancelled')`

// The runs a prune selects: finished before the cut, in (finished_at, id)
// order. sqlPruneKeep finds the Keep-th run that finished last.
const (
	sqlPruneKeep = `SELECT finished_at, id FROM runs WHERE ` + prunable + `
ORDER BY finished_at DESC, id DESC LIMIT 1 OFFSET $1`
	sqlPruneBatch = `SELECT id, definition_hash FROM runs WHERE ` + prunable + `
AND (finished_at < $1 OR (finished_at = $1 AND id < $2)) ORDER BY finished_at, id LIMIT $3
FOR UPDATE SKIP LOCKED`
	sqlPruneCount = `SELECT count(*), coalesce(sum((SELECT count(*) FROM run_events e WHERE e.run_id = r.id)), 0)
FROM runs r WHERE ` + prunable + ` AND (finished_at < $1 OR (finished_at = $1 AND id < $2))`
)

// pruneCut is where p's selection ends: every finished run before
// (at, id) in (finished_at, id) order. ok is false when p selects none.
func (s *Store) pruneCut(ctx context.Context, p store.Prune) (at time.Time, id string, ok bool, err error) {
	if !p.Before.IsZero() {
		at, ok = commit.NormTime(p.Before), true
	}
	if p.Keep > 0 {
		var kt time.Time
		var kid string
		err := s.pool.QueryRow(ctx, sqlPruneKeep, p.Keep-1).Scan(&kt, &kid)
		switch {
		case errors.Is(err, pgx.ErrNoRows): // Keep or fewer finished runs
		case err != nil:
			return time.Time{}, "", false, err
		case !ok || kt.After(at) || (kt.Equal(at) && kid > id):
			at, id, ok = kt, kid, true
		}
	}
	if st := commit.NormTime(p.Settled); ok && !p.Settled.IsZero() && (at.After(st) || (at.Equal(st) && id != "")) {
		at, id = st, ""
	}
	return at, id, ok, nil
}

// PruneRuns implements store.Pruner. Processes pruning at once delete
// disjoint batches (FOR UPDATE SKIP LOCKED). A definition deleted while
// another process creates a run of it fails that commit (the key is
// deferred), whose batch then runs again op by op and stores it anew.
func (s *Store) PruneRuns(ctx context.Context, p store.Prune) (store.Pruned, error) {
	at, id, ok, err := s.pruneCut(ctx, p)
	if err != nil || !ok {
		return store.Pruned{}, wrapPrune(err)
	}
	if p.DryRun {
		var got store.Pruned
		err := s.pool.QueryRow(ctx, sqlPruneCount, at, id).Scan(&got.Runs, &got.Events)
		return got, wrapPrune(err)
	}
	size := commit.PruneBatchSize(p)
	got, err := commit.PruneBatches(ctx, size, p.Pause, func() (store.Pruned, error) {
		return s.pruneBatch(ctx, at, id, size)
	})
	return got, wrapPrune(err)
}

func wrapPrune(err error) error {
	if err != nil {
		return fmt.Errorf("postgres: prune runs: %w", err)
	}
	return nil
}

// pruneBatch deletes up to size of the selected runs, their node states
// and events, and the definitions no run references any more, in one
// transaction of its own (not the writer's: a failure fails nothing else).
func (s *Store) pruneBatch(ctx context.Context, at time.Time, cutID string, size int) (store.Pruned, error) {
	if s.w.Closed() {
		return store.Pruned{}, store.ErrClosed
	}
	var got store.Pruned
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		got = store.Pruned{}
		rows, err := tx.Query(ctx, sqlPruneBatch, at, cutID, size)
		if err != nil {
			return err
		}
		var ids []string
		var hashes [][]byte
		seen := map[string]bool{}
		for rows.Next() {
			var id string
			var hash []byte
			if err := rows.Scan(&id, &hash); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			if hash != nil && !seen[string(hash)] {
				seen[string(hash)] = true
				hashes = append(hashes, hash)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(`DELETE FROM run_events WHERE run_id = ANY($1)`, ids)
		b.Queue(`DELETE FROM node_states WHERE run_id = ANY($1)`, ids)
		b.Queue(`DELETE FROM runs WHERE id = ANY($1) AND `+prunable, ids)
		b.Queue(`DELETE FROM definitions d WHERE d.hash = ANY($1)
AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.definition_hash = d.hash)`, hashes)
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		for _, n := range []*int64{&got.Events, nil, &got.Runs, &got.Definitions} {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			if n != nil {
				*n = tag.RowsAffected()
			}
		}
		return br.Close()
	})
	return got, err
}
