package sqlite

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
)

// TestOpenConcurrentlyOnANewDatabase: processes started together on a
// new database (two serve --data DIR) all open it; the migrations run once,
// under a lock, instead of failing the loser with "table ... already
// exists" halfway through.
func TestOpenConcurrentlyOnANewDatabase(t *testing.T) {
	t.Parallel()
	const rounds, openers = 20, 3
	for round := range rounds {
		path := filepath.Join(t.TempDir(), "switchyard.db")
		var wg sync.WaitGroup
		errs := make([]error, openers)
		stores := make([]*Store, openers)
		start := make(chan struct{})
		for i := range openers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				stores[i], errs[i] = Open(context.Background(), path, WithLogger(slog.New(slog.DiscardHandler)))
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: opener %d of %d: %v", round+1, i+1, openers, err)
			}
		}
		for _, s := range stores {
			ws, err := s.ListWorkflows(context.Background())
			if err != nil || len(ws) != 0 {
				t.Errorf("round %d: a new database lists %d workflows, %v", round+1, len(ws), err)
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}
