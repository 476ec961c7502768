package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

var cancelTests = []test{
	{"CancelRequests", runsOnly(testCancelRequests)},
}

// testCancelRequests: a cancel request waits for whoever holds the run
// (now or after a takeover) and is handed out once.
func testCancelRequests(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	held, free := newRun("run-creq-held", engine.StatusRunning, t0), newRun("run-creq-free", engine.StatusRunning, t0)
	held.Owner, held.LeaseUntil = "A", t0.Add(time.Hour)
	create(t, s, held)
	create(t, s, free)
	mustIs(t, s.RequestCancel(ctx, "no-such-run"), engine.ErrNotFound, "RequestCancel of an unknown run")
	must(t, s.RequestCancel(ctx, held.ID), "RequestCancel held")
	must(t, s.RequestCancel(ctx, free.ID), "RequestCancel free")
	take := func(owner string, want ...string) {
		t.Helper()
		got, err := s.TakeCancelRequests(ctx, owner)
		must(t, err, "TakeCancelRequests "+owner)
		if !slices.Equal(got, want) {
			t.Errorf("TakeCancelRequests(%q) = %v, want %v", owner, got, want)
		}
	}
	take("B")
	take("")
	take("A", held.ID)
	take("A") // handed out once
	must(t, s.AcquireRun(ctx, free.ID, "B", "", t0, t0.Add(time.Hour)), "AcquireRun free by B")
	take("B", free.ID) // the request waited for a holder
	take("B")
}
