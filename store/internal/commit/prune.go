package commit

import (
	"context"
	"time"

	"github.com/switchyard/switchyard/store"
)

// PruneBatches runs batch (one short write deleting up to size runs) until
// a batch deletes fewer than size, pausing between batches as long as the
// last one took, and at least pause: deletion takes at most about half of
// the writer's time, however large the backlog.
func PruneBatches(ctx context.Context, size int, pause time.Duration, batch func() (store.Pruned, error)) (store.Pruned, error) {
	var total store.Pruned
	for {
		start := time.Now()
		got, err := batch()
		total.Add(got)
		if err != nil || got.Runs < int64(size) {
			return total, err
		}
		t := time.NewTimer(max(pause, time.Since(start)))
		select {
		case <-ctx.Done():
			t.Stop()
			return total, ctx.Err()
		case <-t.C:
		}
	}
}

// PruneBatchSize is p.Batch or its default.
func PruneBatchSize(p store.Prune) int {
	if p.Batch > 0 {
		return p.Batch
	}
	return store.DefaultPruneBatch
}
