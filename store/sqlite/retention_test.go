package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
)

func pragmaInt(t *testing.T, s *Store, name string) int64 {
	t.Helper()
	var v int64
	mustOK(t, s.rdb.QueryRow(`PRAGMA `+name).Scan(&v), name)
	return v
}

// TestPruneReturnsSpace: a new database vacuums incrementally, so pruning
// shrinks the file, not only frees pages inside it.
func TestPruneReturnsSpace(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	if got := pragmaInt(t, s, "auto_vacuum"); got != 2 {
		t.Fatalf("auto_vacuum = %d on a new database, want 2 (INCREMENTAL)", got)
	}
	big := strings.Repeat("x", 4000)
	for i := range 200 {
		r := newRun(fmt.Sprintf("run-%03d", i))
		fin := t0.Add(time.Duration(i) * time.Second)
		r.Status, r.FinishedAt = engine.StatusCompleted, &fin
		mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
		for seq := int64(1); seq <= 10; seq++ {
			s.Emit(ev(r.ID, seq, big))
		}
	}
	mustOK(t, s.CreateRun(ctx, newRun("barrier"), nil, nil), "barrier") // after every event
	before := pragmaInt(t, s, "page_count") * pragmaInt(t, s, "page_size")
	got, err := s.PruneRuns(ctx, store.Prune{Before: t0.Add(150 * time.Second), Batch: 40})
	mustOK(t, err, "PruneRuns")
	if got.Runs != 150 || got.Events != 1500 {
		t.Fatalf("pruned %+v, want 150 runs and 1500 events", got)
	}
	after := pragmaInt(t, s, "page_count") * pragmaInt(t, s, "page_size")
	if got.FreedBytes < 4000*1500 || before-after != got.FreedBytes || pragmaInt(t, s, "freelist_count") != 0 {
		t.Fatalf("database %d -> %d bytes, %d reported freed, %d free pages left", before, after, got.FreedBytes,
			pragmaInt(t, s, "freelist_count"))
	}
	integrityOK(t, s)
}

// TestVacuumConvertsAnOlderDatabase: a database made before migration 11
// keeps its pages after pruning until VacuumFile (refused while a store
// has it open), which also makes it vacuum incrementally from then on.
func TestVacuumConvertsAnOlderDatabase(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "switchyard.db")
	// Made as before migration 11: without auto_vacuum.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	mustOK(t, err, "sql.Open")
	db.SetMaxOpenConns(1)
	p, err := newProvider(db)
	mustOK(t, err, "newProvider")
	_, err = p.UpTo(ctx, 10)
	mustOK(t, err, "migrate up to 10")
	mustOK(t, db.Close(), "close raw db")
	s := openAt(t, path)
	if got := pragmaInt(t, s, "auto_vacuum"); got != 0 {
		t.Fatalf("auto_vacuum = %d on an older database, want 0", got)
	}
	for i := range 50 {
		r := newRun(fmt.Sprintf("run-%d", i))
		r.Status, r.FinishedAt = engine.StatusCompleted, &t0
		r.Input = strings.Repeat("i", 8000)
		mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	}
	got, err := s.PruneRuns(ctx, store.Prune{Before: t0.Add(time.Second)})
	mustOK(t, err, "PruneRuns")
	if got.Runs != 50 || got.FreedBytes != 0 || pragmaInt(t, s, "freelist_count") == 0 {
		t.Fatalf("pruned %+v with %d free pages: the pages stay in the file", got, pragmaInt(t, s, "freelist_count"))
	}
	if err := VacuumFile(ctx, path); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("VacuumFile of a database a store has open: %v", err)
	}
	mustOK(t, s.Close(), "Close")
	mustOK(t, VacuumFile(ctx, path), "VacuumFile")
	s = openAt(t, path)
	if pragmaInt(t, s, "auto_vacuum") != 2 || pragmaInt(t, s, "freelist_count") != 0 {
		t.Fatalf("after VacuumFile: auto_vacuum %d, %d free pages", pragmaInt(t, s, "auto_vacuum"), pragmaInt(t, s, "freelist_count"))
	}
	var journal string
	mustOK(t, s.rdb.QueryRow(`PRAGMA journal_mode`).Scan(&journal), "journal_mode")
	if journal != "wal" {
		t.Fatalf("journal_mode %s after VacuumFile", journal)
	}
	integrityOK(t, s)
}

// TestPruneQueriesUseIndexes: selecting what to prune reads runs_finished
// from its oldest end (or its newest, for Keep), never every run.
func TestPruneQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	for _, c := range []struct {
		q    string
		args []any
	}{{sqlPruneBatch, []any{1, "", 10}}, {sqlPruneKeep, []any{5}}, {sqlPruneCount, []any{1, ""}}} {
		rows, err := s.rdb.Query("EXPLAIN QUERY PLAN "+c.q, c.args...)
		mustOK(t, err, "explain "+c.q)
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			mustOK(t, rows.Scan(&id, &parent, &notused, &detail), "scan plan")
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, "; ")
		if !strings.Contains(joined, "USING INDEX runs_finished") || strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("%s\n  plan: %s", c.q, joined)
		}
	}
}
