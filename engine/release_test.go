package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowRelease is a real MemStore whose ReleaseRun waits at a gate, and
// which notes an AcquireRun made while a release is in flight.
type slowRelease struct {
	*MemStore
	releasing atomic.Bool
	entered   chan struct{} // closed when a release reaches the gate
	gate      chan struct{}
	enterOnce sync.Once
	gateOnce  sync.Once
	overlap   atomic.Bool // an AcquireRun came while a release was in flight
}

func (s *slowRelease) open() { s.gateOnce.Do(func() { close(s.gate) }) }

func (s *slowRelease) ReleaseRun(ctx context.Context, runID, owner string) error {
	if s.releasing.Load() {
		s.enterOnce.Do(func() { close(s.entered) })
		<-s.gate
		defer s.releasing.Store(false)
	}
	return s.MemStore.ReleaseRun(ctx, runID, owner)
}

func (s *slowRelease) AcquireRun(ctx context.Context, runID, owner string, expect RunStatus, now, until time.Time) error {
	if s.releasing.Load() {
		s.overlap.Store(true)
		s.open() // the release then ends the lease just taken
	}
	return s.MemStore.AcquireRun(ctx, runID, owner, expect, now, until)
}

// TestReleasePendingBeforeReload: a release left pending by a driver that
// lost its run (see tryExit) may be in flight when the run is recovered
// here again. The new driver's lease must be taken after that release,
// never before it: released, the new driver's writes would be refused
// and another process would drive the run too.
func TestReleasePendingBeforeReload(t *testing.T) {
	t.Parallel()
	st := &slowRelease{MemStore: NewMemStore(), entered: make(chan struct{}), gate: make(chan struct{})}
	e, _ := newTestEngine(t, Config{Store: st})
	t.Cleanup(st.open) // before the engine closes: cleanups run last first
	run := startYAMLT(t, e, wf("  - id: ok\n    approval: {message: proceed}\n  - id: b\n    bash: echo b\n    depends_on: [ok]\n"), "")
	if got := waitRun(t, e, run.ID); got.Status != StatusPaused {
		t.Fatalf("run %s, want paused", got.Status)
	}
	// As a claim by this process leaves it: leased here, not live, with a
	// release pending from the driver that lost it.
	ctx := context.Background()
	now := time.Now()
	if err := st.MemStore.AcquireRun(ctx, run.ID, e.cfg.Owner, "", now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	e.addUnreleased(run.ID)
	st.releasing.Store(true)
	released := make(chan struct{})
	go func() { defer close(released); e.releasePending(ctx) }()
	select {
	case <-st.entered:
	case <-time.After(time.Minute):
		t.Fatal("the pending release never started")
	}
	resumed := make(chan error, 1)
	go func() {
		_, err := e.Resume(ctx, run.ID, "ok", Decision{Decision: "approve"})
		resumed <- err
	}()
	// Opened by an AcquireRun made too early (the bug), or else after a
	// while (the resume is waiting for the release, as it should).
	go func() {
		select {
		case <-time.After(200 * time.Millisecond):
			st.open()
		case <-released:
		}
	}()
	<-released
	if err := <-resumed; err != nil {
		t.Fatalf("resume: %v", err)
	}
	if st.overlap.Load() {
		t.Fatal("the run's lease was taken while a release of it was in flight")
	}
	got := waitRun(t, e, run.ID)
	if got.Status != StatusCompleted {
		t.Fatalf("run %s %q, want completed", got.Status, got.Error)
	}
}
