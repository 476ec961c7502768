package postgres

import (
	"context"
	"fmt"

	"github.com/switchyard/switchyard/engine"
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
