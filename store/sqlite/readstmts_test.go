package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Read queries are prepared once, up to a bound; past it (queries built
// at run time in many shapes) they still run, unprepared.
func TestReadStatementsBounded(t *testing.T) {
	ctx := testCtx(t)
	s := openStore(t)
	mustOK(t, s.CreateRun(ctx, newRun("run-1"), nil, nil), "CreateRun")
	for i := range maxReadStmts + 20 {
		var got int
		q := fmt.Sprintf("SELECT count(*) + %d FROM runs WHERE id = ?", i)
		if err := s.rd().QueryRowContext(ctx, q, "run-1").Scan(&got); err != nil || got != i+1 {
			t.Fatalf("query %d: %d, %v", i, got, err)
		}
	}
	s.reads.mu.RLock()
	n := len(s.reads.m)
	s.reads.mu.RUnlock()
	if n != maxReadStmts {
		t.Fatalf("%d statements kept, want the bound %d", n, maxReadStmts)
	}
	// A query that does not parse is reported, not cached.
	var x int
	if err := s.rd().QueryRowContext(ctx, "SELEC 1").Scan(&x); err == nil {
		t.Fatal("a bad query ran")
	}
	// The hot reads still work from the cache: a run read twice.
	for range 2 {
		r, err := s.GetRun(ctx, "run-1")
		if err != nil || r.ID != "run-1" {
			t.Fatalf("GetRun: %v %v", r, err)
		}
		if _, _, _, err := s.LoadRun(ctx, "run-1"); err != nil {
			t.Fatalf("LoadRun: %v", err)
		}
	}
}

// TestConcurrentLoadsOnAFreshStore: more concurrent LoadRuns than the read
// pool has connections, before any statement is prepared, all complete.
// Each held its read transaction's connection and waited for another to
// prepare a statement on (and every other read waited behind the cache's
// lock): a fresh server's first burst of approvals hung until the
// requests gave up (`switchyard load approvals`, one start in three).
func TestConcurrentLoadsOnAFreshStore(t *testing.T) {
	for round := range 5 {
		s := openStore(t, WithReadConns(2))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		mustOK(t, s.CreateRun(ctx, newRun("run-1"), nil, nil), "CreateRun")
		errs := make(chan error, 16)
		for range 16 {
			go func() {
				_, _, _, err := s.LoadRun(ctx, "run-1")
				errs <- err
			}()
		}
		for range 16 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: LoadRun: %v", round, err)
			}
		}
		cancel()
	}
}
