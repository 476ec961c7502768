package engine

import "testing"

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
