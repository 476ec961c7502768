package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
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

// TestRunsFinishedIndexDownAndUp: migration 13 rewrites runs_finished's
// condition as comparisons and back; either way the index holds exactly
// the finished runs, and after it retention's queries read it.
func TestRunsFinishedIndexDownAndUp(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "switchyard.db")
	s := openAt(t, path)
	for i, st := range []engine.RunStatus{engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed,
		engine.StatusCancelled, engine.StatusPaused} {
		r := newRun(fmt.Sprintf("run-%d", i))
		r.Status = st
		if st.Terminal() {
			fin := t0.Add(time.Duration(i) * time.Second)
			r.FinishedAt = &fin
		}
		mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	}
	mustOK(t, s.Close(), "Close")

	db, p := openMigrations(t, path)
	indexed := func() (cond string, n int) {
		t.Helper()
		mustOK(t, db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE name = 'runs_finished'`).Scan(&cond), "index sql")
		mustOK(t, db.QueryRowContext(ctx, `SELECT count(*) FROM runs INDEXED BY runs_finished WHERE `+
			cond[strings.Index(cond, "WHERE")+len("WHERE"):]).Scan(&n), "count through the index")
		return cond, n
	}
	if cond, n := indexed(); !strings.Contains(cond, "status = 'completed' OR") || n != 3 {
		t.Fatalf("at 13: %s holds %d runs, want comparisons and 3", cond, n)
	}
	_, err := p.DownTo(ctx, 12)
	mustOK(t, err, "down to 12")
	if cond, n := indexed(); !strings.Contains(cond, "status IN ('completed', 'failed', 'cancelled')") || n != 3 {
		t.Fatalf("at 12: %s holds %d runs, want the IN list and 3", cond, n)
	}
	_, err = p.UpTo(ctx, 13)
	mustOK(t, err, "up to 13")
	mustOK(t, db.Close(), "close")
	s = openAt(t, path)
	res, err := s.PruneRuns(ctx, store.Prune{Keep: 1})
	mustOK(t, err, "PruneRuns")
	if res.Runs != 2 {
		t.Errorf("prune keeping 1 of 3 finished runs deleted %d", res.Runs)
	}
}

// openMigrations opens the closed store file at path with the migrations'
// provider, to go up or down by hand; the file closes with the test.
func openMigrations(t *testing.T, path string) (*sql.DB, *goose.Provider) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, false))
	mustOK(t, err, "open")
	t.Cleanup(func() { db.Close() })
	p, err := newProvider(db)
	mustOK(t, err, "provider")
	return db, p
}
