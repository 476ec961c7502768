package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// slowEnd is a real MemStore whose terminal checkpoint waits until
// released: the run's end is decided, and not yet stored.
type slowEnd struct {
	*MemStore
	entered     chan struct{} // closed when the terminal checkpoint begins
	release     chan struct{}
	enterOnce   sync.Once
	releaseOnce sync.Once
}

func (s *slowEnd) Checkpoint(ctx context.Context, r *Run, nodes []*NodeState) error {
	if r.Status.Terminal() {
		s.enterOnce.Do(func() { close(s.entered) })
		<-s.release
	}
	return s.MemStore.Checkpoint(ctx, r, nodes)
}

func (s *slowEnd) open() { s.releaseOnce.Do(func() { close(s.release) }) }

// TestSnapshotReportsEndOnceStored: a live run whose end is decided but
// not yet committed is not reported ended (GET /api/runs/{id} reads
// Snapshot): a reader that saw the end and then read the log from the
// store missed the run's last events, and a crash before the commit would
// run its last step again. Once the end commits, Snapshot reports it.
func TestSnapshotReportsEndOnceStored(t *testing.T) {
	t.Parallel()
	st := &slowEnd{MemStore: NewMemStore(), entered: make(chan struct{}), release: make(chan struct{})}
	e, _ := newTestEngine(t, Config{Store: st})
	t.Cleanup(st.open) // before the engine closes: cleanups run last first
	run := startYAMLT(t, e, wf("  - id: a\n    bash: echo hi\n"), "")
	select {
	case <-st.entered:
	case <-time.After(time.Minute):
		t.Fatal("the run's end was never checkpointed")
	}

	// However long a reader waits, the end is not reported while the store
	// lacks it: Snapshot gives up with the reader's context.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	got, _, err := e.Snapshot(ctx, run.ID)
	cancel()
	if err == nil {
		t.Fatalf("Snapshot reported the run %s before its end was stored", got.Status)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Snapshot: %v, want the reader's deadline", err)
	}
	if stored, err := st.GetRun(context.Background(), run.ID); err != nil || stored.Status.Terminal() {
		t.Fatalf("stored run %+v, %v: the end was stored before the checkpoint was released", stored, err)
	}

	st.open()
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, nodes, err := e.Snapshot(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusCompleted || len(nodes) != 1 || nodes[0].Status != NodeCompleted {
		t.Fatalf("Snapshot after the end committed: run %s, nodes %+v", got.Status, nodes)
	}
	evs, err := st.Events(ctx, run.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Type != EvRunStatus || last.Content != string(StatusCompleted) {
		t.Errorf("the stored log ends with %s %q, want run_status completed", last.Type, last.Content)
	}
}
