package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// settle decides what a loop with nothing running does next; true means
// the run left the loop's responsibility (paused, ended) and may exit.
func (r *runner) settle() bool {
	if r.ending != "" {
		return r.finish(r.ending, r.endReason)
	}
	if len(r.waiting) > 0 {
		if r.status() != StatusPaused {
			r.setStatus(StatusPaused)
			r.headerChanged = true
		}
		// Inline completions since the last checkpoint must be durable
		// before the loop lets go of the run.
		if err := r.persist(); err != nil {
			r.failStore(err)
			return false
		}
		return true
	}
	if len(r.queue) > 0 || len(r.pending) > 0 {
		return false
	}
	// Failed from the node states, not from a flag of this loop: a run
	// paused and continued (reloaded) must remember failures too.
	if why := r.failSummary(); why != "" {
		return r.finish(StatusFailed, why)
	}
	return r.finish(StatusCompleted, "")
}

func (r *runner) failSummary() string {
	var parts []string
	for i, ns := range r.nodes {
		if ns.Status == NodeFailed {
			parts = append(parts, fmt.Sprintf("%s: %s", r.plan.nodes[i].label, ns.Error))
		}
	}
	return strings.Join(parts, "; ")
}

// finish records a terminal status durably. It reports false when the
// store refused the write (disk full, locked): the loop then keeps the run
// and tries again, rather than leaving it "running" in the database. The
// status is decided once: a retry writes the same status, never another
// (a completed run whose final save failed does not become failed).
func (r *runner) finish(s RunStatus, reason string) bool {
	if r.finished {
		return true // a request kept the loop going after the end: it is said
	}
	// From here on the run is ending with s: failStore and settle retry
	// this end instead of deciding a new one.
	r.ending, r.endReason = s, reason
	r.stateMu.Lock()
	r.run.Error = reason
	r.run.WaitingForInput = false
	r.stateMu.Unlock()
	r.waiting = nil
	if s == StatusFailed || s == StatusCancelled {
		r.skipUndecided("run " + string(s))
	}
	r.setStatus(s)
	r.headerChanged = true
	if err := r.persist(); err != nil {
		if errors.Is(err, ErrConflict) {
			r.loseLease(err)
			return true
		}
		if errors.Is(err, ErrTerminal) {
			// Already ended in the store: its status stands.
			r.e.log.Warn("persist final run state: the run has already ended", "run", r.run.ID, "err", err)
			r.finished = true
			return true
		}
		// Retried like any checkpoint; the end stays decided (see failStore).
		r.failStore(err)
		return r.lost
	}
	r.finished = true
	return true
}

// skipUndecided ends every node a failed or cancelled run never ran (or
// left waiting for a human) as skipped, so no run ends with nodes
// undecided; a node that ran before keeps its last result. Nodes still
// running are ended by complete.
func (r *runner) skipUndecided(reason string) {
	for i, ns := range r.nodes {
		switch ns.Status {
		case NodeIdle, NodePending, NodeQueued, NodeWaiting:
		default:
			continue
		}
		r.inPending[i] = false
		if ns.Visits > 0 {
			// Activated again in a cycle but never run again: no new
			// visit, so it keeps its last result (as decideNode does).
			r.stateMu.Lock()
			ns.Status = ns.lastStatus()
			r.stateMu.Unlock()
			r.markDirty(i)
			continue
		}
		r.markSkipped(i, reason)
	}
	r.pending = r.pending[:0]
}

// tryExit leaves the loop unless a request arrived meanwhile.
func (r *runner) tryExit() bool {
	e := r.e
	e.mu.Lock()
	r.inboxMu.Lock()
	if len(r.inbox) > 0 {
		r.inboxMu.Unlock()
		e.mu.Unlock()
		return false
	}
	r.gone = true
	r.inboxMu.Unlock()
	var releasing chan struct{}
	if e.live[r.run.ID] == r {
		delete(e.live, r.run.ID)
		if _, busy := e.loading[r.run.ID]; !busy && !r.finished && !r.lost {
			// Until the release below is done the run counts as loading: a
			// decision delivered meanwhile (deliver) waits, then loads and
			// takes the lease afresh. Without this it could take the lease
			// first and have this release end it (its driver's writes then
			// refused: "not owned by").
			releasing = make(chan struct{})
			e.loading[r.run.ID] = releasing
		}
	}
	e.mu.Unlock()
	if r.finished {
		// The terminal checkpoint released the run.
	} else if !r.lost {
		if err := e.store.ReleaseRun(context.Background(), r.run.ID, e.cfg.Owner); err != nil {
			e.log.Warn("release run; will retry", "run", r.run.ID, "err", err)
			e.addUnreleased(r.run.ID)
		}
	} else {
		// The run may still be leased to this process (a stale lease, not a
		// takeover): release it when the store is back, if still ours.
		e.addUnreleased(r.run.ID)
	}
	if releasing != nil {
		e.mu.Lock()
		delete(e.loading, r.run.ID)
		close(releasing)
		e.mu.Unlock()
	}
	// Last: whoever waited for the exit (Wait, Close) finds the run
	// neither live nor loading here. Closed before the loading entry was
	// gone, a release left pending for the run took it for a new driver
	// and dropped itself (TestWaitReturnsAfterTheExitIsDone).
	close(r.exited)
	return true
}

// end starts ending the run: running nodes are cancelled and drained, then
// the loop records the terminal status.
func (r *runner) end(s RunStatus, reason string) {
	if r.ending != "" {
		return
	}
	r.ending = s
	r.endReason = reason
	r.queue = nil
	// A node waiting for a human is in flight like a running one: it ends
	// with the run, rather than staying "waiting" in a finished run.
	now := time.Now().UTC()
	for _, i := range r.waiting {
		ns := r.nodes[i]
		r.stateMu.Lock()
		ns.Status, ns.Error, ns.FinishedAt, ns.Wait = NodeFailed, string(s), &now, nil
		r.stateMu.Unlock()
		r.markDirty(i)
		r.emit(r.plan.nodes[i].id, EvStepEnd, string(s), map[string]any{"status": NodeFailed, "error": string(s)})
	}
	r.waiting = nil
	r.cancel()
}
