package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
)

var retentionTests = []test{
	{"OnlyFinishedRunsGo", testPruneOnlyFinished},
	{"KeepCount", testPruneKeepCount},
	{"SettledRunsOnly", testPruneSettled},
	{"DryRunDeletesNothing", testPruneDryRun},
	{"SharedDefinitionsStay", testPruneDefinitions},
}

// finishedRun stores a run that ended with status at fin, with events
// events.
func finishedRun(t *testing.T, s store.Store, id string, status engine.RunStatus, fin time.Time, events int) {
	t.Helper()
	r := newRun(id, status, fin.Add(-time.Minute))
	r.UpdatedAt = fin
	if status.Terminal() {
		r.FinishedAt = &fin
	}
	evs := make([]*engine.Event, events)
	for i := range evs {
		evs[i] = event(id, int64(i+1))
	}
	must(t, s.CreateRun(ctxT(t), r, []*engine.NodeState{{NodeID: "a", Status: engine.NodeCompleted}}, evs), "CreateRun "+id)
}

// remaining lists the ids of the runs the store still holds, sorted.
func remaining(t *testing.T, s store.Store) []string {
	t.Helper()
	runs, err := s.ListRuns(ctxT(t), engine.RunFilter{Limit: 1000})
	must(t, err, "ListRuns")
	ids := runIDs(runs)
	slices.Sort(ids)
	return ids
}

func checkPruned(t *testing.T, what string, got, want store.Pruned) {
	t.Helper()
	if got.Runs != want.Runs || got.Events != want.Events {
		t.Fatalf("%s: pruned %d runs and %d events, want %d and %d", what, got.Runs, got.Events, want.Runs, want.Events)
	}
}

// testPruneOnlyFinished: runs that completed, failed or were cancelled
// before the cut-off go with their events; runs that are pending,
// running, paused (however old: a paused run waits for days) or
// interrupted stay, with their events, and so do runs that finished since.
func testPruneOnlyFinished(t *testing.T, open Open) {
	ctx := ctxT(t)
	s := openWithWorkflows(t, open)
	old, recent := t0, t0.Add(48*time.Hour)
	finishedRun(t, s, "run-completed", engine.StatusCompleted, old, 3)
	finishedRun(t, s, "run-failed", engine.StatusFailed, old.Add(time.Second), 2)
	finishedRun(t, s, "run-cancelled", engine.StatusCancelled, old.Add(2*time.Second), 0)
	for _, st := range []engine.RunStatus{engine.StatusPaused, engine.StatusRunning, engine.StatusPending, engine.StatusInterrupted} {
		finishedRun(t, s, "run-"+string(st), st, old.Add(-24*time.Hour), 2)
	}
	finishedRun(t, s, "run-recent", engine.StatusCompleted, recent, 1)

	got, err := s.PruneRuns(ctx, store.Prune{Before: t0.Add(time.Hour)})
	must(t, err, "PruneRuns")
	checkPruned(t, "PruneRuns", got, store.Pruned{Runs: 3, Events: 5})
	want := []string{"run-interrupted", "run-paused", "run-pending", "run-recent", "run-running"}
	if ids := remaining(t, s); !slices.Equal(ids, want) {
		t.Fatalf("runs left %v, want %v", ids, want)
	}
	for _, id := range []string{"run-completed", "run-failed", "run-cancelled"} {
		_, err := s.GetRun(ctx, id)
		mustIs(t, err, engine.ErrNotFound, "GetRun of a pruned run")
		_, err = s.Events(ctx, id, 0, 0)
		mustIs(t, err, engine.ErrNotFound, "Events of a pruned run")
	}
	// The paused run, older than the cut-off, is whole.
	r, nodes, last, err := s.LoadRun(ctx, "run-paused")
	must(t, err, "LoadRun of the paused run")
	if r.Status != engine.StatusPaused || len(nodes) != 1 || last != 2 {
		t.Fatalf("paused run after pruning: %s, %d nodes, last seq %d", r.Status, len(nodes), last)
	}
	// Nothing more to prune: a second pass deletes nothing.
	got, err = s.PruneRuns(ctx, store.Prune{Before: t0.Add(time.Hour)})
	must(t, err, "PruneRuns again")
	checkPruned(t, "second PruneRuns", got, store.Pruned{})
}

// testPruneKeepCount: Keep keeps the runs that finished last (ties broken
// by id), in batches of any size; with Before too, either selects.
func testPruneKeepCount(t *testing.T, open Open) {
	ctx := ctxT(t)
	s := openWithWorkflows(t, open)
	for i := range 10 {
		finishedRun(t, s, fmt.Sprintf("run-%d", i), engine.StatusCompleted, t0.Add(time.Duration(i/2)*time.Minute), 1)
	}
	finishedRun(t, s, "run-paused", engine.StatusPaused, t0.Add(-time.Hour), 1)
	got, err := s.PruneRuns(ctx, store.Prune{Keep: 7, Batch: 2})
	must(t, err, "PruneRuns keep 7")
	checkPruned(t, "keep 7", got, store.Pruned{Runs: 3, Events: 3})
	want := []string{"run-3", "run-4", "run-5", "run-6", "run-7", "run-8", "run-9", "run-paused"}
	if ids := remaining(t, s); !slices.Equal(ids, want) {
		t.Fatalf("after keep 7: %v, want %v", ids, want)
	}
	// Keep 5 would spare run-5 on; Before (finished before t0+4m) also
	// selects run-5, run-6 and run-7.
	got, err = s.PruneRuns(ctx, store.Prune{Keep: 5, Before: t0.Add(4 * time.Minute)})
	must(t, err, "PruneRuns keep 5 or before")
	checkPruned(t, "keep 5 or before", got, store.Pruned{Runs: 5, Events: 5})
	want = []string{"run-8", "run-9", "run-paused"}
	if ids := remaining(t, s); !slices.Equal(ids, want) {
		t.Fatalf("after keep 5 or before: %v, want %v", ids, want)
	}
	got, err = s.PruneRuns(ctx, store.Prune{Keep: 5})
	must(t, err, "PruneRuns keep 5 of 2")
	checkPruned(t, "keep 5 of 2", got, store.Pruned{})
}

// testPruneSettled: Settled spares runs that finished since, whatever
// Keep and Before select.
func testPruneSettled(t *testing.T, open Open) {
	ctx := ctxT(t)
	s := openWithWorkflows(t, open)
	for i := range 4 {
		finishedRun(t, s, fmt.Sprintf("run-%d", i), engine.StatusCompleted, t0.Add(time.Duration(i)*time.Minute), 2)
	}
	got, err := s.PruneRuns(ctx, store.Prune{Keep: 1, Before: t0.Add(time.Hour), Settled: t0.Add(2 * time.Minute)})
	must(t, err, "PruneRuns")
	checkPruned(t, "settled", got, store.Pruned{Runs: 2, Events: 4})
	if ids := remaining(t, s); !slices.Equal(ids, []string{"run-2", "run-3"}) {
		t.Fatalf("runs left %v, want run-2 and run-3", ids)
	}
}

// testPruneDryRun: a dry run counts what a real one then deletes.
func testPruneDryRun(t *testing.T, open Open) {
	ctx := ctxT(t)
	s := openWithWorkflows(t, open)
	for i := range 5 {
		finishedRun(t, s, fmt.Sprintf("run-%d", i), engine.StatusCompleted, t0.Add(time.Duration(i)*time.Minute), i)
	}
	p := store.Prune{Before: t0.Add(3 * time.Minute)}
	p.DryRun = true
	dry, err := s.PruneRuns(ctx, p)
	must(t, err, "dry PruneRuns")
	checkPruned(t, "dry run", dry, store.Pruned{Runs: 3, Events: 3})
	if ids := remaining(t, s); len(ids) != 5 {
		t.Fatalf("a dry run deleted runs: %v left", ids)
	}
	p.DryRun = false
	got, err := s.PruneRuns(ctx, p)
	must(t, err, "PruneRuns")
	checkPruned(t, "the real run", got, dry)
}

// testPruneDefinitions: pruning a run keeps the definition it shares with
// a run that stays; once the last run of a definition is gone, a new run
// of it stores it again.
func testPruneDefinitions(t *testing.T, open Open) {
	ctx := ctxT(t)
	s := openWithWorkflows(t, open)
	def := json.RawMessage(`{"nodes":[{"id":"s","type":"start"}],"edges":[],"shared":true}`)
	for i, fin := range []time.Time{t0, t0.Add(time.Hour)} {
		r := newRun(fmt.Sprintf("run-%d", i), engine.StatusCompleted, fin)
		r.Definition, r.FinishedAt = def, &fin
		create(t, s, r)
	}
	_, err := s.PruneRuns(ctx, store.Prune{Before: t0.Add(time.Minute)})
	must(t, err, "PruneRuns of the first")
	r, err := s.GetRun(ctx, "run-1")
	must(t, err, "GetRun of the run left")
	if string(r.Definition) != string(def) {
		t.Fatalf("definition of the run left: %s", r.Definition)
	}
	_, err = s.PruneRuns(ctx, store.Prune{Before: t0.Add(2 * time.Hour)})
	must(t, err, "PruneRuns of the second")
	again := newRun("run-again", engine.StatusRunning, t0.Add(3*time.Hour))
	again.Definition = def
	create(t, s, again)
	r, err = s.GetRun(ctx, "run-again")
	must(t, err, "GetRun of a new run of it")
	if string(r.Definition) != string(def) {
		t.Fatalf("definition stored anew: %s", r.Definition)
	}
}
