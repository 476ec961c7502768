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

// A run resumed from the store that pauses again at once lets go of its
// lease while the resume that loaded it may still be finishing. The next
// resume must wait for that release: taken first, its lease would be
// ended by it (same owner), and its claim of the answer refused ("not
// owned by"), as TestModelGraphs once saw. The test holds the resume that
// loads the run until the run has paused again and is releasing.
func TestResumeWaitsForTheReleaseOfARunThatPausedAgain(t *testing.T) {
	t.Parallel()
	e, st, run := pausedOverSlowRelease(t, "  - id: a1\n    approval: {message: one}\n  - id: a2\n    approval: {message: two}\n    depends_on: [a1]\n")
	st.releasing.Store(true) // the next release waits at the gate
	e.afterLaunch = func() {
		e.afterLaunch = nil
		select {
		case <-st.entered:
		case <-time.After(time.Minute):
			t.Error("the resumed run never released its lease at a2")
		}
	}
	ctx := context.Background()
	if _, err := e.Resume(ctx, run.ID, "a1", Decision{Decision: "approve"}); err != nil {
		t.Fatalf("resume a1: %v", err)
	}
	// The run is paused at a2 and its release is held. A resume of a2 now
	// must not take the lease before the release is done.
	second := make(chan error, 1)
	go func() {
		_, err := e.Resume(ctx, run.ID, "a2", Decision{Decision: "approve"})
		second <- err
	}()
	// Opened by an AcquireRun made too early (the bug), or else after a
	// while (the resume is waiting for the release, as it should).
	go func() {
		time.Sleep(200 * time.Millisecond)
		st.open()
	}()
	if err := <-second; err != nil {
		t.Fatalf("resume a2: %v", err)
	}
	if st.overlap.Load() {
		t.Fatal("the resume of a2 took the run's lease while the release of the earlier driver was under way")
	}
	if got := waitRun(t, e, run.ID); got.Status != StatusCompleted {
		t.Fatalf("run %s (%s), want completed", got.Status, got.Error)
	}
}
