package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

var leasesTests = []test{
	{"AcquireRun", runsOnly(testAcquire)},
	{"ReleaseRun", runsOnly(testRelease)},
	{"CreateRunHeldByOwner", runsOnly(testCreateHeld)},
	{"TerminalCheckpointReleases", runsOnly(testTerminalReleases)},
	{"SameStatusCheckpoint", runsOnly(testSameStatus)},
	{"RenewLeases", runsOnly(testRenew)},
	{"ExpireLeases", runsOnly(testExpire)},
	{"HeldRuns", runsOnly(testHeldRuns)},
}

// testHeldRuns: a process asks which runs it still holds (live lease, its
// owner name) to stop the drivers of runs taken over while it stalled. The
// store judges "live" by its own clock, so these leases are set around now.
func testHeldRuns(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	now := time.Now()
	for _, id := range []string{"held-a1", "held-a2", "held-b", "held-expired"} {
		create(t, s, newRun(id, engine.StatusRunning, t0))
	}
	must(t, s.AcquireRun(ctx, "held-a1", "A", "", now, now.Add(time.Hour)), "A acquires a1")
	must(t, s.AcquireRun(ctx, "held-a2", "A", "", now, now.Add(time.Hour)), "A acquires a2")
	must(t, s.AcquireRun(ctx, "held-b", "B", "", now, now.Add(time.Hour)), "B acquires b")
	past := now.Add(-time.Hour)
	must(t, s.AcquireRun(ctx, "held-expired", "A", "", past, past.Add(time.Second)), "A's lease that expired")

	held := func(owner string) []string {
		t.Helper()
		ids, err := s.HeldRuns(ctx, owner)
		must(t, err, "HeldRuns "+owner)
		slices.Sort(ids)
		return ids
	}
	if got, want := held("A"), []string{"held-a1", "held-a2"}; !slices.Equal(got, want) {
		t.Errorf("HeldRuns(A) = %v, want %v (an expired lease is not held)", got, want)
	}
	if got, want := held("B"), []string{"held-b"}; !slices.Equal(got, want) {
		t.Errorf("HeldRuns(B) = %v, want %v", got, want)
	}
	if got := held(""); len(got) != 0 {
		t.Errorf("HeldRuns(\"\") = %v, want none: unowned runs are nobody's", got)
	}
	// B takes a1 over (as after A stalled past its lease): A no longer holds it.
	later := now.Add(2 * time.Hour)
	must(t, s.AcquireRun(ctx, "held-a1", "B", "", later, later.Add(time.Hour)), "B takes a1 over")
	if got, want := held("A"), []string{"held-a2"}; !slices.Equal(got, want) {
		t.Errorf("HeldRuns(A) after B took a1 = %v, want %v", got, want)
	}
	must(t, s.ReleaseRun(ctx, "held-a2", "A"), "A releases a2")
	if got := held("A"); len(got) != 0 {
		t.Errorf("HeldRuns(A) after its release = %v, want none", got)
	}
}

func testAcquire(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-acq", engine.StatusRunning, t0)
	create(t, s, r)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

	steps := []struct {
		name      string
		owner     string
		expect    engine.RunStatus
		now, till time.Time
		want      error
	}{
		{"free run", "A", "", sec(0), sec(30), nil},
		{"same owner renews", "A", "", sec(10), sec(40), nil},
		{"other owner, live lease", "B", "", sec(20), sec(50), engine.ErrConflict},
		{"other owner, lease just before expiry", "B", "", sec(39), sec(69), engine.ErrConflict},
		{"other owner, expired lease", "B", "", sec(41), sec(71), nil},
		{"previous owner lost it", "A", "", sec(42), sec(72), engine.ErrConflict},
		{"holder, expected status differs", "B", engine.StatusPaused, sec(43), sec(73), engine.ErrConflict},
		{"holder, expected status matches", "B", engine.StatusRunning, sec(44), sec(74), nil},
		{"expired, expected status differs", "C", engine.StatusPaused, sec(100), sec(130), engine.ErrConflict},
		{"expired, expected status matches", "C", engine.StatusRunning, sec(100), sec(130), nil},
	}
	for _, st := range steps {
		err := s.AcquireRun(ctx, r.ID, st.owner, st.expect, st.now, st.till)
		if st.want == nil {
			must(t, err, st.name)
		} else {
			mustIs(t, err, st.want, st.name)
		}
	}
	// Acquiring never changes the run's state.
	got, err := s.GetRun(ctx, r.ID)
	must(t, err, "GetRun")
	checkRun(t, "after acquiring", r, got)

	mustIs(t, s.AcquireRun(ctx, "no-such-run", "A", "", sec(0), sec(30)), engine.ErrNotFound, "unknown run")
}

func testRelease(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-rel", engine.StatusRunning, t0)
	create(t, s, r)
	must(t, s.AcquireRun(ctx, r.ID, "A", "", t0, t0.Add(time.Hour)), "AcquireRun A")
	mustIs(t, s.ReleaseRun(ctx, r.ID, "B"), engine.ErrConflict, "release by a non-holder")
	mustIs(t, s.AcquireRun(ctx, r.ID, "B", "", t0.Add(time.Minute), t0.Add(time.Hour)), engine.ErrConflict,
		"the refused release kept A's lease")
	must(t, s.ReleaseRun(ctx, r.ID, "A"), "release by the holder")
	// A's lease would still be live: only the release lets B in now.
	must(t, s.AcquireRun(ctx, r.ID, "B", "", t0.Add(time.Minute), t0.Add(time.Hour)), "AcquireRun B after release")
	mustIs(t, s.ReleaseRun(ctx, "no-such-run", "A"), engine.ErrNotFound, "release of an unknown run")
	got, err := s.GetRun(ctx, r.ID)
	must(t, err, "GetRun")
	checkRun(t, "leases do not change the run", r, got)
}

// testCreateHeld: a run created with an owner is held by it, exactly as if
// acquired, and its header does not carry the lease.
func testCreateHeld(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-held", engine.StatusPending, t0)
	r.Owner, r.LeaseUntil = "A", t0.Add(time.Minute)
	create(t, s, r)
	mustIs(t, s.AcquireRun(ctx, r.ID, "B", "", t0.Add(30*time.Second), t0.Add(time.Hour)), engine.ErrConflict,
		"acquire by another owner while the creator's lease is live")
	orphans, err := s.ListOrphaned(ctx, t0.Add(30*time.Second))
	must(t, err, "ListOrphaned")
	if slices.Contains(orphans, r.ID) {
		t.Errorf("ListOrphaned = %v: a live held run is not orphaned", orphans)
	}
	hdr := *r
	hdr.Status = engine.StatusRunning
	must(t, s.Checkpoint(ctx, &hdr, nil), "checkpoint by the creator")
	orphans, err = s.ListOrphaned(ctx, t0.Add(2*time.Minute))
	must(t, err, "ListOrphaned after expiry")
	if !slices.Contains(orphans, r.ID) {
		t.Errorf("ListOrphaned = %v: the expired lease of the creator makes the run orphaned", orphans)
	}
	must(t, s.AcquireRun(ctx, r.ID, "B", "", t0.Add(2*time.Minute), t0.Add(time.Hour)), "acquire after the lease expired")
	got, err := s.GetRun(ctx, r.ID)
	must(t, err, "GetRun")
	want := *r
	want.Owner, want.LeaseUntil = "", time.Time{}
	want.Status = engine.StatusRunning
	checkRun(t, "held run", &want, got)
}

// testTerminalReleases: the checkpoint that finishes a run releases it (no
// separate ReleaseRun), while other checkpoints keep the lease.
func testTerminalReleases(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	for _, st := range []engine.RunStatus{engine.StatusCompleted, engine.StatusFailed, engine.StatusCancelled} {
		r := newRun("run-term-"+string(st), engine.StatusRunning, t0)
		r.Owner, r.LeaseUntil = "A", t0.Add(time.Hour)
		create(t, s, r)
		hdr := *r
		hdr.Status = engine.StatusPaused
		must(t, s.Checkpoint(ctx, &hdr, nil), "pausing checkpoint")
		mustIs(t, s.AcquireRun(ctx, r.ID, "B", "", t0, t0.Add(time.Hour)), engine.ErrConflict,
			"a paused checkpoint keeps the lease")
		hdr.Status = st
		must(t, s.Checkpoint(ctx, &hdr, nil), "terminal checkpoint")
		must(t, s.AcquireRun(ctx, r.ID, "B", "", t0, t0.Add(time.Hour)), "acquire after a "+string(st)+" checkpoint")
	}
}

// testSameStatus: a checkpoint that says its status is the one its driver
// last wrote (Run.SameStatus, a hint a store may use to write less) still
// writes every other header field, keeps the lease, is fenced by the owner
// and never changes a finished run.
func testSameStatus(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	r := newRun("run-same", engine.StatusRunning, t0)
	r.Owner, r.LeaseUntil = "A", t0.Add(time.Hour)
	create(t, s, r)
	hdr := *r
	hdr.SameStatus = true
	hdr.Input = "more"
	hdr.CurrentNodeID = "n2"
	hdr.Usage = engine.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7, CostUSD: ptr(0.25)}
	hdr.UpdatedAt = t0.Add(time.Minute)
	must(t, s.Checkpoint(ctx, &hdr, []*engine.NodeState{{NodeID: "n1", Status: engine.NodeCompleted, Output: "o"}}),
		"same-status checkpoint")
	got, nodes, _, err := s.LoadRun(ctx, r.ID)
	must(t, err, "LoadRun")
	want := hdr
	want.SameStatus, want.Owner, want.LeaseUntil = false, "", time.Time{}
	checkRun(t, "header after a same-status checkpoint", &want, got)
	if len(nodes) != 1 || nodes[0].Output != "o" {
		t.Errorf("nodes after a same-status checkpoint: %+v", nodes)
	}
	mustIs(t, s.AcquireRun(ctx, r.ID, "B", "", t0, t0.Add(time.Hour)), engine.ErrConflict,
		"a same-status checkpoint keeps the lease")
	other := hdr
	other.Owner = "B"
	mustIs(t, s.Checkpoint(ctx, &other, nil), engine.ErrConflict, "a same-status checkpoint by another owner")
	fin := t0.Add(2 * time.Minute)
	hdr.SameStatus, hdr.Status, hdr.FinishedAt = false, engine.StatusCompleted, &fin
	must(t, s.Checkpoint(ctx, &hdr, nil), "terminal checkpoint")
	late := hdr
	late.SameStatus, late.Status, late.FinishedAt, late.CurrentNodeID = true, engine.StatusRunning, nil, "late"
	mustIs(t, s.Checkpoint(ctx, &late, nil), engine.ErrTerminal, "a same-status checkpoint after the end")
	got, err = s.GetRun(ctx, r.ID)
	must(t, err, "GetRun")
	if got.Status != engine.StatusCompleted || got.CurrentNodeID != "n2" {
		t.Errorf("a late same-status checkpoint changed a finished run: %s at %q", got.Status, got.CurrentNodeID)
	}
}

func testRenew(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	for i, owner := range []string{"A", "A", "B"} {
		r := newRun(fmt.Sprintf("run-renew-%d", i), engine.StatusRunning, t0)
		create(t, s, r)
		must(t, s.AcquireRun(ctx, r.ID, owner, "", t0, t0.Add(10*time.Second)), "AcquireRun "+r.ID)
	}
	must(t, s.RenewLeases(ctx, "A", t0.Add(time.Minute)), "RenewLeases A")
	must(t, s.RenewLeases(ctx, "nobody", t0.Add(time.Hour)), "RenewLeases of an owner without runs")
	later := t0.Add(30 * time.Second) // after the original leases, before A's renewed ones
	mustIs(t, s.AcquireRun(ctx, "run-renew-0", "C", "", later, later.Add(time.Minute)), engine.ErrConflict, "renewed lease run-renew-0")
	mustIs(t, s.AcquireRun(ctx, "run-renew-1", "C", "", later, later.Add(time.Minute)), engine.ErrConflict, "renewed lease run-renew-1")
	must(t, s.AcquireRun(ctx, "run-renew-2", "C", "", later, later.Add(time.Minute)), "B's lease was not renewed")
	orphans, err := s.ListOrphaned(ctx, later)
	must(t, err, "ListOrphaned")
	if len(orphans) != 0 {
		t.Errorf("ListOrphaned = %v, want none (all leases live)", orphans)
	}
}

// testExpire: a dead owner's leases end at once; other owners keep theirs,
// and unowned runs are untouched.
func testExpire(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	for i, owner := range []string{"A", "A", "B"} {
		r := newRun(fmt.Sprintf("run-expire-%d", i), engine.StatusRunning, t0)
		create(t, s, r)
		must(t, s.AcquireRun(ctx, r.ID, owner, "", t0, t0.Add(time.Hour)), "AcquireRun "+r.ID)
	}
	free := newRun("run-expire-free", engine.StatusPaused, t0)
	create(t, s, free)
	must(t, s.ExpireLeases(ctx, "A"), "ExpireLeases A")
	must(t, s.ExpireLeases(ctx, ""), "ExpireLeases of no owner")
	must(t, s.ExpireLeases(ctx, "nobody"), "ExpireLeases of an owner without runs")
	now := t0.Add(time.Second) // long before the leases would run out
	orphans, err := s.ListOrphaned(ctx, now)
	must(t, err, "ListOrphaned")
	if want := []string{"run-expire-0", "run-expire-1"}; !slices.Equal(orphans, want) {
		t.Errorf("ListOrphaned = %v, want %v (A's runs only)", orphans, want)
	}
	mustIs(t, s.AcquireRun(ctx, "run-expire-2", "C", "", now, now.Add(time.Minute)), engine.ErrConflict, "B's live lease")
	must(t, s.AcquireRun(ctx, "run-expire-0", "C", "", now, now.Add(time.Minute)), "A's expired lease")
	// The dead owner's writes stay fenced off.
	r0, _, _, err := s.LoadRun(ctx, "run-expire-0")
	must(t, err, "LoadRun")
	r0.Owner = "A"
	mustIs(t, s.Checkpoint(ctx, r0, nil), engine.ErrConflict, "checkpoint by the dead owner after a takeover")
	// A renewal by the owner would revive them: it is dead, so none comes.
	must(t, s.RenewLeases(ctx, "C", now.Add(time.Hour)), "RenewLeases C")
	mustIs(t, s.AcquireRun(ctx, "run-expire-0", "D", "", now, now.Add(time.Minute)), engine.ErrConflict, "C's lease after the takeover")
}
