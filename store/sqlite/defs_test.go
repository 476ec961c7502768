package sqlite

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
)

// A definition is written with the first run of it; later runs of the same
// graph only reference it, and each run still reads back its own.
func TestDefinitionWrittenOncePerGraph(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	d1 := json.RawMessage(`{"nodes":[{"id":"a","type":"start"}]}`)
	d2 := json.RawMessage(`{"nodes":[{"id":"b","type":"start"}]}`)
	for i, def := range []json.RawMessage{d1, d1, d2, d1, d2} {
		r := newRun(string(rune('p' + i)))
		r.Definition = def
		mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
		got, err := s.GetRun(ctx, r.ID)
		mustOK(t, err, "GetRun")
		if string(got.Definition) != string(def) {
			t.Fatalf("run %s reads definition %s, want %s", r.ID, got.Definition, def)
		}
	}
	if n := s.w.defsWritten.Load(); n != 2 {
		t.Fatalf("%d definition inserts for 5 runs of 2 graphs, want 2", n)
	}
}

// A prune that deletes a definition makes the writer forget it: the next
// run of that graph stores it again instead of referencing a missing row
// (which would fail the run's foreign key, and with it the whole batch).
func TestDefinitionStoredAgainAfterPrune(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	def := json.RawMessage(`{"nodes":[{"id":"only","type":"start"}]}`)
	old := newRun("old")
	old.Definition = def
	fin := t0
	old.Status, old.FinishedAt = engine.StatusCompleted, &fin
	mustOK(t, s.CreateRun(ctx, old, nil, nil), "CreateRun old")
	got, err := s.PruneRuns(ctx, store.Prune{Before: t0.Add(time.Second), Batch: 10})
	mustOK(t, err, "PruneRuns")
	if got.Runs != 1 || got.Definitions != 1 {
		t.Fatalf("pruned %+v, want the run and its definition", got)
	}
	r := newRun("new")
	r.Definition = def
	mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun after the prune")
	back, err := s.GetRun(ctx, r.ID)
	mustOK(t, err, "GetRun")
	if string(back.Definition) != string(def) {
		t.Fatalf("definition %s after the prune, want %s", back.Definition, def)
	}
	if n := s.w.defsWritten.Load(); n != 2 {
		t.Fatalf("%d definition inserts, want 2 (again after the prune)", n)
	}
	integrityOK(t, s)
}

// A batch that stored a definition but did not commit leaves it unknown.
func TestDefinitionNotKnownAfterRollback(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t)
	def := `{"nodes":[{"id":"x","type":"start"}]}`
	h := definitionHash([]byte(def)).([]byte)
	boom := errors.New("boom")
	err := s.w.do(ctx, nil, func(t *wtx) error {
		if _, err := t.exec(sqlInsertDefinition, h, def); err != nil {
			return err
		}
		t.newDefs = append(t.newDefs, string(h))
		return boom // not a rejection: the batch rolls back
	})
	if !errors.Is(err, boom) {
		t.Fatalf("do: %v, want boom", err)
	}
	if s.w.defStored(string(h)) {
		t.Fatal("a definition of a batch that rolled back is taken for stored")
	}
	r := newRun("after")
	r.Definition = json.RawMessage(def)
	mustOK(t, s.CreateRun(ctx, r, nil, nil), "CreateRun")
	if !s.w.defStored(string(h)) {
		t.Fatal("a definition stored by a committed run is not known")
	}
}
