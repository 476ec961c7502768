package sqlite

import (
	"context"
	"fmt"

	"github.com/switchyard/switchyard/engine"
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
