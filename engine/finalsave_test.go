package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// fullDisk is a real MemStore whose terminal checkpoints fail while full
// is set, the way SQLite's do on a full disk (nothing of the write stored).
type fullDisk struct {
	*MemStore
	full     atomic.Bool
	failures atomic.Int32
}

func (f *fullDisk) Checkpoint(ctx context.Context, r *Run, nodes []*NodeState) error {
	if r.Status.Terminal() && f.full.Load() {
		f.failures.Add(1)
		return fmt.Errorf("store write failed, nothing committed: %w", ErrStorageFull)
	}
	return f.MemStore.Checkpoint(ctx, r, nodes)
}

// TestFinalSaveRetriedNotConverted: a run that completed but whose final
// save failed (disk full) is saved as completed once space returns; it is
// never turned into "failed", and it has exactly one terminal event.
func TestFinalSaveRetriedNotConverted(t *testing.T) {
	t.Parallel()
	st := &fullDisk{MemStore: NewMemStore()}
	st.full.Store(true)
	e, rec := newTestEngine(t, Config{Store: st})
	run := startYAMLT(t, e, wf("  - id: a\n    bash: echo hi\n"), "")
	// Three failures: the end itself, then retries of it.
	deadline := time.Now().Add(30 * time.Second)
	for st.failures.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d failed final saves", st.failures.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	st.full.Store(false)
	got := waitRun(t, e, run.ID)
	if got.Status != StatusCompleted || got.Error != "" {
		t.Fatalf("run ended %s (%q), want completed", got.Status, got.Error)
	}
	stored, err := st.GetRun(context.Background(), run.ID)
	if err != nil || stored.Status != StatusCompleted {
		t.Fatalf("stored run %+v, %v", stored, err)
	}
	var statuses []string
	for _, ev := range rec.ofType(run.ID, EvRunStatus) {
		statuses = append(statuses, ev.Content)
	}
	if fmt.Sprint(statuses) != "[running completed]" {
		t.Errorf("run_status events %v, want [running completed]", statuses)
	}
	if errs := rec.ofType(run.ID, EvError); len(errs) != 0 {
		t.Errorf("error events %+v", errs)
	}
}
