package engine

import "time"

// SetCancelWait shortens how long Cancel waits for another process to act
// on a cancel request; the returned func restores it.
func SetCancelWait(d time.Duration) (restore func()) {
	old := cancelWait
	cancelWait = d
	return func() { cancelWait = old }
}

// evDecide marks, in a run's event log, where its loop decided pending
// nodes (see markDecisions).
const evDecide = "x-decide"

// markDecisions makes every decision point of e's runs an evDecide event,
// so the model-based test replays decisions exactly where the engine made
// them: after a whole batch of completions, not after each.
func markDecisions(e *Engine) {
	e.onEvaluate = func(r *runner) {
		if len(r.pending) > 0 {
			r.emit(SystemNodeID, evDecide, "", nil)
		}
	}
}
