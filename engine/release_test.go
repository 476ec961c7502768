package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowRelease is a real MemStore whose next ReleaseRun, once armed, waits
// at a gate, and which notes an AcquireRun made while that release is in
// flight.
type slowRelease struct {
	*MemStore
	releasing atomic.Bool   // armed: the next release waits at the gate
	inFlight  atomic.Bool   // that release is at the gate or under way
	entered   chan struct{} // closed when a release reaches the gate
	gate      chan struct{}
	enterOnce sync.Once
	gateOnce  sync.Once
	overlap   atomic.Bool // an AcquireRun came while a release was in flight
}

func (s *slowRelease) open() { s.gateOnce.Do(func() { close(s.gate) }) }

func (s *slowRelease) ReleaseRun(ctx context.Context, runID, owner string) error {
	if !s.releasing.CompareAndSwap(true, false) {
		return s.MemStore.ReleaseRun(ctx, runID, owner)
	}
	s.inFlight.Store(true)
	s.enterOnce.Do(func() { close(s.entered) })
	<-s.gate
	err := s.MemStore.ReleaseRun(ctx, runID, owner)
	s.inFlight.Store(false)
	return err
}

func (s *slowRelease) AcquireRun(ctx context.Context, runID, owner string, expect RunStatus, now, until time.Time) error {
	if s.inFlight.Load() {
		s.overlap.Store(true)
		s.open() // the release then ends the lease just taken
	}
	return s.MemStore.AcquireRun(ctx, runID, owner, expect, now, until)
}

// pausedOverSlowRelease starts a YAML workflow of steps on an engine over
// a slowRelease store and waits for the run to pause.
func pausedOverSlowRelease(t *testing.T, steps string) (*Engine, *slowRelease, *Run) {
	t.Helper()
	st := &slowRelease{MemStore: NewMemStore(), entered: make(chan struct{}), gate: make(chan struct{})}
	e, _ := newTestEngine(t, Config{Store: st})
	t.Cleanup(st.open) // before the engine closes: cleanups run last first
	run := startYAMLT(t, e, wf(steps), "")
	if got := waitRun(t, e, run.ID); got.Status != StatusPaused {
		t.Fatalf("run %s, want paused", got.Status)
	}
	return e, st, run
}

// TestReleasePendingBeforeReload: a release left pending by a driver that
// lost its run (see tryExit) may be in flight when the run is recovered
// here again. The new driver's lease must be taken after that release,
// never before it: released, the new driver's writes would be refused
// and another process would drive the run too.
func TestReleasePendingBeforeReload(t *testing.T) {
	t.Parallel()
	e, st, run := pausedOverSlowRelease(t, "  - id: ok\n    approval: {message: proceed}\n  - id: b\n    bash: echo b\n    depends_on: [ok]\n")
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

// claimingStore is a real MemStore that claims orphaned runs as
// PostgreSQL's store does (OrphanClaimer), runs afterClaim once the claim
// is made, before the engine acts on it, and counts the releases of each
// run by each owner.
type claimingStore struct {
	*MemStore
	afterClaim func(ids []string)
	released   sync.Map // runID + "/" + owner -> *atomic.Int64
}

func (s *claimingStore) ClaimOrphaned(ctx context.Context, owner string, now, until time.Time, _ int) ([]string, error) {
	ids, err := s.ListOrphaned(ctx, now)
	if err != nil {
		return nil, err
	}
	var took []string
	for _, id := range ids {
		if s.AcquireRun(ctx, id, owner, "", now, until) == nil {
			took = append(took, id)
		}
	}
	if s.afterClaim != nil {
		s.afterClaim(took)
	}
	return took, nil
}

func (s *claimingStore) ReleaseRun(ctx context.Context, runID, owner string) error {
	n, _ := s.released.LoadOrStore(runID+"/"+owner, &atomic.Int64{})
	n.(*atomic.Int64).Add(1)
	return s.MemStore.ReleaseRun(ctx, runID, owner)
}

func (s *claimingStore) releases(runID, owner string) int64 {
	if n, ok := s.released.Load(runID + "/" + owner); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// orphanedRun leaves a run in st as another process that stopped with
// its step in flight leaves it: running and unowned (orphaned).
func orphanedRun(t *testing.T, st *MemStore) *Run {
	t.Helper()
	a, _ := newTestEngine(t, Config{Store: st, Owner: "process-a"})
	run := startYAMLT(t, a, wf("  - id: slow\n    bash: sleep 300\n"), "")
	waitFor(t, func() bool {
		_, nodes, _ := a.Snapshot(context.Background(), run.ID)
		for _, n := range nodes {
			if n.NodeID == "slow" && n.Status == NodeRunning {
				return true
			}
		}
		return false
	}, "the step to start")
	a.Close()
	return run
}

// TestClaimEndsPendingRelease: a run this process claims back (Recover
// on a store that claims) may have a lease release still pending from a
// driver of this process that lost it earlier. That release must not end
// the claim before the run is driven again (another process could take
// the run in between): the claim drops it, in one step for the lease
// loop's retry of pending releases.
func TestClaimEndsPendingRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &claimingStore{MemStore: NewMemStore()}
	run := orphanedRun(t, st.MemStore)
	b, _ := newTestEngine(t, Config{Store: st, Owner: "process-b"})
	b.addUnreleased(run.ID) // left by an earlier driver of run.ID in b
	retried := make(chan struct{})
	st.afterClaim = func([]string) {
		// The lease loop retries pending releases right then. It may not
		// end the claim: wait for it a while (it finishes at once when
		// nothing orders it after the claim), then go on either way.
		go func() { defer close(retried); b.releasePending(ctx) }()
		select {
		case <-retried:
		case <-time.After(2 * time.Second):
		}
	}
	took, err := b.Recover(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(took) != 1 || took[0] != run.ID {
		t.Fatalf("recovered %v, want [%s]", took, run.ID)
	}
	<-retried
	if n := st.releases(run.ID, "process-b"); n != 0 {
		t.Errorf("process-b released the run it had just claimed (%d releases): the pending release ended the claim", n)
	}
	if got, err := st.GetRun(ctx, run.ID); err != nil || got.Status != StatusRunning {
		t.Fatalf("run %v %v, want running (driven by process-b)", got, err)
	}
}

// downStore is a claimingStore whose reads of a run and lease releases
// fail while down is set, as when the database goes away between a claim
// and the load that follows it.
type downStore struct {
	*claimingStore
	down atomic.Bool
}

var errDown = errors.New("database unavailable")

func (s *downStore) GetRun(ctx context.Context, runID string) (*Run, error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.claimingStore.GetRun(ctx, runID)
}

func (s *downStore) ReleaseRun(ctx context.Context, runID, owner string) error {
	if s.down.Load() {
		return errDown
	}
	return s.claimingStore.ReleaseRun(ctx, runID, owner)
}

// TestClaimLeftUndrivenIsReleasedLater: a run claimed by Recover that
// cannot be loaded (the database went away right after the claim) is
// released; when that release fails too, it is retried with the other
// pending releases. Before, it stayed leased to this process, whose lease
// renewals (every run the owner holds) kept it from every process for
// good, and the run never ended (PostgreSQL's TestRestartFailsNoRun saw
// one run "running two minutes after the restart").
func TestClaimLeftUndrivenIsReleasedLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &downStore{claimingStore: &claimingStore{MemStore: NewMemStore()}}
	run := orphanedRun(t, st.MemStore)
	b, _ := newTestEngine(t, Config{Store: st, Owner: "process-b"})
	st.afterClaim = func([]string) { st.down.Store(true) }
	took, err := b.Recover(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(took) != 0 {
		t.Fatalf("recovered %v with the database down", took)
	}
	st.afterClaim = nil
	st.down.Store(false)
	b.releasePending(ctx) // what the lease loop does first, every third of a lease
	held, err := st.HeldRuns(ctx, "process-b")
	if err != nil {
		t.Fatal(err)
	}
	if len(held) > 0 {
		t.Fatalf("process-b still holds %v once the database is back, without driving it: its renewals keep it from everyone", held)
	}
	if ids, err := st.ListOrphaned(ctx, time.Now()); err != nil || len(ids) != 1 || ids[0] != run.ID {
		t.Fatalf("orphaned runs %v %v, want [%s]: recovery can take it again", ids, err, run.ID)
	}
}

// TestPendingReleaseOutlivesAFailedLoad: a release left pending by a
// driver that let go of its run (the database was full) must survive a
// load of the run here that is under way when the lease loop looks, since
// the load may fail too. Before, the lease loop dropped it as though the
// run were driven again; the load then failed to take the lease, the run
// stayed leased to this process with nobody driving it, and the renewals
// of all of this process's leases kept it from recovery for good
// (faults' TestDiskFull under load: "running a minute after the fault
// cleared ... nobody drives it any more").
func TestPendingReleaseOutlivesAFailedLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := NewMemStore()
	run := orphanedRun(t, st)
	b, _ := newTestEngine(t, Config{Store: st, Owner: "process-b"})
	// As the driver that let go leaves it: leased to b (a stale lease),
	// not live, its release pending.
	now := time.Now()
	if err := st.AcquireRun(ctx, run.ID, "process-b", "", now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	b.addUnreleased(run.ID)
	// A load of the run is under way here (a recovery, a decision).
	loading := make(chan struct{})
	b.mu.Lock()
	b.loading[run.ID] = loading
	b.mu.Unlock()
	b.releasePending(ctx)
	// The load fails without taking the lease.
	b.mu.Lock()
	delete(b.loading, run.ID)
	close(loading)
	b.mu.Unlock()
	b.releasePending(ctx) // the lease loop's next look
	held, err := st.HeldRuns(ctx, "process-b")
	if err != nil {
		t.Fatal(err)
	}
	if len(held) > 0 {
		t.Fatalf("process-b still holds %v after the failed load, driving nothing: its renewals keep the run from recovery", held)
	}
}
