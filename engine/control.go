package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Controlling runs from outside their loop: waiting, reading, answering
// approvals, continuing and cancelling, in this process or another.

// Wait blocks until the run leaves its loop (paused, ended, or engine
// closed) and returns its header. A run that is not live returns at once.
func (e *Engine) Wait(ctx context.Context, runID string) (*Run, error) {
	e.mu.Lock()
	r := e.live[runID]
	e.mu.Unlock()
	if r != nil {
		select {
		case <-r.exited:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.store.GetRun(ctx, runID)
}

// WaitSnapshot waits like Wait and returns the run's header and node
// states as Snapshot does. A run that ended in this process with its
// terminal checkpoint committed is answered from the runner's memory,
// which equals what was stored (nothing changes a finished run), without
// reading the store; any other (paused, taken over, not live here) is
// read as Snapshot reads it.
func (e *Engine) WaitSnapshot(ctx context.Context, runID string) (*Run, []*NodeState, error) {
	run, nodes, _, err := e.WaitLog(ctx, runID)
	return run, nodes, err
}

// WaitLog is WaitSnapshot that also returns the run's whole log when the
// run was started here with StartOptions.KeepLog and ended here: the log
// as emitted, which is what was stored (only the driver appends to a live
// run's log, and its end committed after every event). It returns a nil
// log otherwise (paused, taken over, continued after a crash, a log over
// the caps): read it from the store then.
func (e *Engine) WaitLog(ctx context.Context, runID string) (*Run, []*NodeState, []Event, error) {
	e.mu.Lock()
	r := e.live[runID]
	e.mu.Unlock()
	if r != nil {
		select {
		case <-r.exited:
		case <-ctx.Done():
			return nil, nil, nil, ctx.Err()
		}
		// finished and lost are written by the loop before it closes
		// exited, so reading them here is ordered after.
		if r.finished && !r.lost {
			run, nodes, err := r.snapshot()
			r.emitMu.Lock()
			var log []Event
			if r.keepLog {
				log = r.kept
			}
			r.emitMu.Unlock()
			return run, nodes, log, err
		}
	}
	run, nodes, err := e.Snapshot(ctx, runID)
	return run, nodes, nil, err
}

// Snapshot returns a run's header and node states: live ones from memory,
// others from the store. A live run's end is reported once it is durable:
// the loop decides it before the checkpoint that stores it with the run's
// last events (a crash before that commit leaves the run to recovery,
// which may run its last step again), and exits once that commits, so a
// reader that sees the end finds the whole log in the store. Until then
// (a store refusing writes: until the loop lets go of the run, at most a
// lease period) Snapshot waits, within ctx.
func (e *Engine) Snapshot(ctx context.Context, runID string) (*Run, []*NodeState, error) {
	e.mu.Lock()
	r := e.live[runID]
	e.mu.Unlock()
	if r != nil {
		run, nodes, err := r.snapshot()
		switch {
		case err == nil && run.Status == StatusPaused && !r.pausedSaved.Load():
			// Paused in memory, not yet in the store: a reader that saw it
			// could be told of an approval that a crash now would undo
			// (the run recovered runs its node again). The store has
			// what is durable; the loop commits the pause at once.
		case err != nil || !run.Status.Terminal():
			return run, nodes, err
		default:
			select {
			case <-r.exited:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
	}
	run, nodes, _, err := e.store.LoadRun(ctx, runID)
	if err != nil {
		return nil, nil, err
	}
	p, err := e.planFor(run)
	if err != nil {
		return run, nodes, nil
	}
	// Nodes never reached have no stored state: report them idle, in
	// definition order.
	byID := make(map[string]*NodeState, len(nodes))
	for _, n := range nodes {
		byID[n.NodeID] = n
	}
	all := make([]*NodeState, len(p.nodes))
	for i, pn := range p.nodes {
		if n, ok := byID[pn.id]; ok {
			all[i] = n
		} else {
			all[i] = &NodeState{NodeID: pn.id}
		}
	}
	return run, all, nil
}

// Resume answers a node waiting for a human and continues the run in this
// process. Exactly one of several concurrent resumes of one node wins; the
// others get ErrConflict. A bad decision is ErrInvalidDecision and changes
// nothing. nodeID may be "" when exactly one node waits.
func (e *Engine) Resume(ctx context.Context, runID, nodeID string, d Decision) (*Run, error) {
	d, err := d.normalize()
	if err != nil {
		return nil, err
	}
	return e.deliver(ctx, runID, request{kind: reqDecision, nodeID: nodeID, decision: d})
}

// Continue resumes an interrupted run (or one whose owner died) from its
// last persisted state: completed nodes are kept, in-flight ones rerun.
func (e *Engine) Continue(ctx context.Context, runID string) (*Run, error) {
	return e.deliver(ctx, runID, request{kind: reqContinue})
}

// Cancel ends a run as cancelled, aborting its in-flight work.
//
// A run another live process drives (the server, while this is the CLI)
// gets a durable cancel request instead: that process polls for requests
// (see cancelPoll) and stops the run; Cancel waits for it up to
// cancelWait, then returns ErrCancelPending with the run as it stands.
func (e *Engine) Cancel(ctx context.Context, runID string) (*Run, error) {
	run, err := e.deliver(ctx, runID, request{kind: reqCancel})
	if !errors.Is(err, ErrDrivenElsewhere) {
		return run, err
	}
	if err := e.store.RequestCancel(ctx, runID); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(cancelWait)
	for {
		run, err := e.store.GetRun(ctx, runID)
		if err != nil {
			return nil, err
		}
		if run.Status.Terminal() {
			return run, nil
		}
		if time.Now().After(deadline) {
			return run, fmt.Errorf("run %s: %w", runID, ErrCancelPending)
		}
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// recoverPolls is how many times per lease period KeepRecovering looks
// for orphaned runs (one indexed query each).
const recoverPolls = 5

// cancelPoll is how often a process with live runs looks for cancel
// requests other processes left for them.
const cancelPoll = 250 * time.Millisecond

// cancelWait bounds how long Cancel waits for another process to act (a
// variable for tests).
var cancelWait = 15 * time.Second

// takeCancelRequests cancels the live runs other processes asked to stop.
func (e *Engine) takeCancelRequests() {
	e.mu.Lock()
	live := len(e.live)
	e.mu.Unlock()
	if live == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.LeaseTTL/3)
	defer cancel()
	ids, err := e.store.TakeCancelRequests(ctx, e.cfg.Owner)
	if err != nil {
		e.log.Warn("read cancel requests", "err", err)
		return
	}
	for _, id := range ids {
		e.log.Info("cancel requested by another process", "run", id)
		// Not Cancel: if the run moved on to yet another process, asking
		// it and waiting would stall lease renewal.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.LeaseTTL)
			defer cancel()
			if _, err := e.deliver(ctx, id, request{kind: reqCancel}); err != nil {
				e.log.Warn("cancel requested run", "run", id, "err", err)
			}
		}()
	}
}

// deliver hands a request to the run's loop, loading the run from the
// store (and taking its lease) when no loop is live in this process. Only
// one goroutine loads a given run at a time; the others wait and then post
// to the loop it started.
func (e *Engine) deliver(ctx context.Context, runID string, req request) (*Run, error) {
	req.reply = make(chan reply, 1)
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, errors.New("engine is closed")
		}
		if r := e.live[runID]; r != nil {
			if req.kind == reqRecover {
				// Recovered here means its lease ran out: the driver still
				// live in this process stalled past it. It stops, and the
				// run is loaded afresh (never handed back to it).
				e.mu.Unlock()
				e.markLost(r)
				select {
				case <-r.exited:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				continue
			}
			if r.post(req) {
				e.mu.Unlock()
				break
			}
			e.mu.Unlock()
			// The loop is on its way out; wait for it, then load afresh.
			select {
			case <-r.exited:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		if wait, busy := e.loading[runID]; busy {
			e.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		done := make(chan struct{})
		e.loading[runID] = done
		e.mu.Unlock()
		r, pending, err := e.load(ctx, runID, req.kind)
		if err == nil {
			r.post(req)
			// launch ends the loading entry as the run goes live.
			if err = e.launch(r, done); err != nil {
				pending = !e.releaseNow(context.WithoutCancel(ctx), runID)
			} else if e.afterLaunch != nil {
				e.afterLaunch()
			}
		}
		if err != nil {
			e.mu.Lock()
			delete(e.loading, runID)
			close(done)
			e.mu.Unlock()
		}
		if pending {
			// Only now: releasePending leaves a run that counts as loading
			// to its loader.
			e.log.Warn("release a run that did not load; will retry", "run", runID, "err", err)
			e.addUnreleased(runID)
		}
		if err != nil {
			return nil, err
		}
		break
	}
	select {
	case rep := <-req.reply:
		return rep.run, rep.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
