package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// Once Wait returns for a run that paused, the run is done here: neither
// live nor loading. A release left pending for it (releasePending) then
// runs instead of being taken for a new driver's lease and dropped.
func TestWaitReturnsAfterTheExitIsDone(t *testing.T) {
	t.Parallel()
	e, _ := newTestEngine(t, Config{})
	for i := range 200 {
		run := startYAMLT(t, e, wf("  - id: ok\n    approval: {message: proceed}\n"), "")
		if got := waitRun(t, e, run.ID); got.Status != StatusPaused {
			t.Fatalf("run %s, want paused", got.Status)
		}
		e.mu.Lock()
		_, live := e.live[run.ID]
		_, loading := e.loading[run.ID]
		e.mu.Unlock()
		if live || loading {
			t.Fatalf("run %d: Wait returned while the run was live=%v loading=%v", i, live, loading)
		}
	}
}

// gatedPause is a real MemStore whose checkpoints that store a paused run
// wait at a gate: the pause is decided in memory, not yet durable.
type gatedPause struct {
	*MemStore
	gate    chan struct{}
	waiting atomic.Bool
}

func (s *gatedPause) Checkpoint(ctx context.Context, r *Run, nodes []*NodeState) error {
	if r.Status == StatusPaused {
		s.waiting.Store(true)
		<-s.gate
	}
	return s.MemStore.Checkpoint(ctx, r, nodes)
}

// A run is reported paused, with its approval, only once the pause is
// durable: a client that saw it and then lost the server (a crash before
// the commit) would look for an approval the recovered run no longer has.
func TestSnapshotReportsAPauseOnceDurable(t *testing.T) {
	t.Parallel()
	st := &gatedPause{MemStore: NewMemStore(), gate: make(chan struct{})}
	e, _ := newTestEngine(t, Config{Store: st})
	t.Cleanup(func() {
		select {
		case <-st.gate:
		default:
			close(st.gate)
		}
	})
	run := startYAMLT(t, e, wf("  - id: first\n    bash: echo one\n  - id: ok\n    approval: {message: proceed}\n    depends_on: [first]\n"), "")
	waitFor(t, st.waiting.Load, "the pause's checkpoint to be tried")
	for range 20 {
		got, _, err := e.Snapshot(context.Background(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == StatusPaused || len(got.PendingApprovals) > 0 {
			t.Fatalf("reported %s with %d pending approvals before the pause was stored", got.Status, len(got.PendingApprovals))
		}
		time.Sleep(time.Millisecond)
	}
	close(st.gate)
	waitFor(t, func() bool {
		got, _, err := e.Snapshot(context.Background(), run.ID)
		return err == nil && got.Status == StatusPaused && len(got.PendingApprovals) == 1
	}, "the run reported paused once stored")
}
