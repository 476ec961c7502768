package storetest

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

var orphansTests = []test{
	{"ListOrphaned", runsOnly(testOrphaned)},
}

func testOrphaned(t *testing.T, s engine.Store) {
	ctx := ctxT(t)
	now := t0.Add(time.Hour)
	setup := []struct {
		id     string
		status engine.RunStatus
		owner  string
		lease  time.Time
	}{
		{"o-running-unowned", engine.StatusRunning, "", time.Time{}},
		{"o-running-expired", engine.StatusRunning, "dead", now.Add(-time.Second)},
		{"o-running-live", engine.StatusRunning, "alive", now.Add(time.Minute)},
		{"o-paused-unowned", engine.StatusPaused, "", time.Time{}},
		{"o-paused-expired", engine.StatusPaused, "dead", now.Add(-time.Second)},
		{"o-completed", engine.StatusCompleted, "", time.Time{}},
		{"o-interrupted", engine.StatusInterrupted, "", time.Time{}},
		{"o-running-released", engine.StatusRunning, "gone", now.Add(time.Minute)},
		{"o-pending-unowned", engine.StatusPending, "", time.Time{}},
		{"o-pending-live", engine.StatusPending, "alive", now.Add(time.Minute)},
	}
	for i, st := range setup {
		create(t, s, newRun(st.id, st.status, t0.Add(time.Duration(i)*time.Second)))
		if st.owner != "" {
			must(t, s.AcquireRun(ctx, st.id, st.owner, "", t0, st.lease), "AcquireRun "+st.id)
		}
	}
	must(t, s.ReleaseRun(ctx, "o-running-released", "gone"), "ReleaseRun")
	got, err := s.ListOrphaned(ctx, now)
	must(t, err, "ListOrphaned")
	sort.Strings(got)
	want := []string{"o-pending-unowned", "o-running-expired", "o-running-released", "o-running-unowned"}
	if !slices.Equal(got, want) {
		t.Fatalf("ListOrphaned = %v, want %v", got, want)
	}
}
