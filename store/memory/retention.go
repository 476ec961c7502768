package memory

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
)

// PruneRuns implements store.Pruner: the same selection as the SQL
// stores, deleted at once (memory holds no writer). Definitions are the
// runs' own here: Pruned.Definitions and FreedBytes stay 0.
func (s *Store) PruneRuns(ctx context.Context, p store.Prune) (store.Pruned, error) {
	if err := s.open(); err != nil {
		return store.Pruned{}, err
	}
	var done []*engine.Run
	for _, st := range []engine.RunStatus{engine.StatusCompleted, engine.StatusFailed, engine.StatusCancelled} {
		runs, err := s.ListRuns(ctx, engine.RunFilter{Status: st, Limit: math.MaxInt})
		if err != nil {
			return store.Pruned{}, err
		}
		for _, r := range runs {
			if r.FinishedAt != nil {
				done = append(done, r)
			}
		}
	}
	// Oldest first, by (finished_at, id) as the SQL stores' index.
	slices.SortFunc(done, func(a, b *engine.Run) int {
		return cmp.Or(a.FinishedAt.Compare(*b.FinishedAt), strings.Compare(a.ID, b.ID))
	})
	n := 0 // the runs before this one are selected
	for i, r := range done {
		byAge := !p.Before.IsZero() && r.FinishedAt.Before(p.Before)
		byCount := p.Keep > 0 && i < len(done)-p.Keep
		if !byAge && !byCount {
			break
		}
		if !p.Settled.IsZero() && !r.FinishedAt.Before(p.Settled) {
			break
		}
		n = i + 1
	}
	var got store.Pruned
	for _, r := range done[:n] {
		if p.DryRun {
			evs, err := s.Events(ctx, r.ID, 0, 0)
			if err != nil {
				return got, err
			}
			got.Runs, got.Events = got.Runs+1, got.Events+int64(len(evs))
			continue
		}
		if events, ok := s.DeleteRun(r.ID); ok {
			got.Runs, got.Events = got.Runs+1, got.Events+int64(events)
		}
	}
	return got, nil
}
