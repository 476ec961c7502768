package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// logged is a node completion found in the event log but not in the node
// states: the process died between the two writes. The log wins.
type logged struct {
	idx int
	res Result
}

// loggedFailure is a node failure found in the event log but not in the
// node states (see logged): the node failed, and is not run again.
type loggedFailure struct {
	idx int
	err string
}

// stepRecord is what the event log says about a node's latest visit.
type stepRecord struct {
	started   int         // visit of the last step_start
	starts    map[int]int // step_starts per visit: the attempts made
	completed map[int]stepEnd
	// ended is the step_end after the last step_start, if any: how the
	// node's latest attempt ended; endedSeq is its place in the log.
	ended    *stepEnd
	endedSeq int64
}

type stepEnd struct {
	CancelRun string     `json:"cancelRun"`
	Status    NodeStatus `json:"status"`
	Output    string     `json:"output"`
	Handle    string     `json:"handle"`
	Visit     int        `json:"visit"`
	Decided   bool       `json:"decided"`
	Rejection string     `json:"rejection"`
	Error     string     `json:"error"`
}

// readLog summarizes step_start/step_end events per node.
func readLog(evs []Event) map[string]*stepRecord {
	out := map[string]*stepRecord{}
	for _, ev := range evs {
		if ev.Type != EvStepStart && ev.Type != EvStepEnd {
			continue
		}
		rec := out[ev.NodeID]
		if rec == nil {
			rec = &stepRecord{starts: map[int]int{}, completed: map[int]stepEnd{}}
			out[ev.NodeID] = rec
		}
		var d stepEnd
		_ = json.Unmarshal(ev.Data, &d)
		if ev.Type == EvStepStart {
			rec.started = d.Visit
			rec.starts[d.Visit]++
			rec.ended = nil
			continue
		}
		rec.ended, rec.endedSeq = &d, ev.Seq
		if d.Status == NodeCompleted && d.Visit > 0 {
			rec.completed[d.Visit] = d
		}
	}
	return out
}

// runStatusData is the data of a terminal run_status event: why it ended.
type runStatusData struct {
	Error string `json:"error,omitempty"`
}

// loggedEnd returns the terminal status the log ends with, and why; ""
// when the last run_status of the log is not terminal.
func loggedEnd(evs []Event) (RunStatus, string) {
	for i := len(evs) - 1; i >= 0; i-- {
		ev := &evs[i]
		if ev.Type != EvRunStatus {
			continue
		}
		s := RunStatus(ev.Content)
		if !s.Terminal() {
			return "", ""
		}
		var d runStatusData
		_ = json.Unmarshal(ev.Data, &d)
		return s, d.Error
	}
	return "", ""
}

// keepLoggedEnd makes the runner end the run as its log says, when the
// previous driver decided and logged the end but could not save it (a
// full disk or an unreachable database for longer than its lease). A
// terminal status is decided once: recovery writes that end instead of
// running the run on (its failed nodes again, its skipped ones at last).
func (r *runner) keepLoggedEnd(evs []Event, log map[string]*stepRecord) {
	s, why := loggedEnd(evs)
	if s == "" {
		return
	}
	r.loggedEnd, r.loggedReason = s, why
	r.loggedSteps = log
}

// keepLoggedCancel makes the runner end the run as cancelled when the log
// holds a completion that cancelled it (a rejected YAML approval, a cancel
// node, a stopped loop: stepEndData.CancelRun) but not the end: the
// previous driver died, or lost its database past its lease, while the
// nodes still in flight were being stopped. That end was decided when the
// completion was logged; running on would run what comes after it.
func (r *runner) keepLoggedCancel(evs []Event) {
	if r.loggedEnd != "" {
		return // the end itself is logged: endAsLogged
	}
	reason := ""
	for i := len(evs) - 1; i >= 0 && reason == ""; i-- {
		ev := &evs[i]
		if ev.Type != EvStepEnd || !bytes.Contains(ev.Data, []byte(`"cancelRun"`)) {
			continue
		}
		var d stepEnd
		if json.Unmarshal(ev.Data, &d) == nil && d.Status == NodeCompleted {
			reason = d.CancelRun
		}
	}
	if reason == "" {
		return
	}
	r.cancelLogged = reason
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == EvWarning && evs[i].NodeID == SystemNodeID && evs[i].Content == cancelWarning(reason) {
			r.cancelWarned = true
			break
		}
	}
}

// cancelWarning is the warning logged when a node's result cancels the run.
func cancelWarning(reason string) string { return "run cancelled: " + reason }

// replayFailures applies the failures restore found logged but not
// saved, as complete would have: the node fails and its dependants learn
// of it. In a plan that fails fast, any failed node (saved or replayed)
// means the run was ending: it returns that end's reason, from the first
// failure in the log, "" otherwise.
func (r *runner) replayFailures() (failFast string) {
	now := time.Now().UTC()
	for _, f := range r.replayFailed {
		ns := r.nodes[f.idx]
		r.stateMu.Lock()
		ns.Status, ns.Error, ns.FinishedAt, ns.Wait, ns.Decision = NodeFailed, f.err, &now, nil, nil
		r.stateMu.Unlock()
		r.markDirty(f.idx)
		if !r.plan.failFast {
			r.notifyOut(f.idx, "")
		}
	}
	r.replayFailed = nil
	log := r.stepLog
	r.stepLog = nil
	if !r.plan.failFast {
		return ""
	}
	first, firstSeq := -1, int64(0)
	for i, ns := range r.nodes {
		if ns.Status != NodeFailed {
			continue
		}
		// Nodes failed by the end itself say so ("failed", "cancelled"):
		// the end's reason is the failure that caused it.
		seq := int64(math.MaxInt64)
		if rec := log[ns.NodeID]; rec != nil && rec.ended != nil && rec.ended.Status == NodeFailed {
			seq = rec.endedSeq
		}
		if ns.Error == string(StatusFailed) || ns.Error == string(StatusCancelled) {
			seq = math.MaxInt64
		}
		if first < 0 || seq < firstSeq {
			first, firstSeq = i, seq
		}
	}
	if first < 0 {
		return ""
	}
	return fmt.Sprintf("%s failed: %s", r.plan.nodes[first].label, r.nodes[first].Error)
}

// endInFlight ends the run with s for why when recovery finds the end was
// already decided but not saved: a completion that cancelled the run
// (keepLoggedCancel), or a failure in a plan that fails fast. The nodes in
// flight when the previous driver died end as that end ended them
// (failed, with s); none runs again, and the loop then saves the end.
func (r *runner) endInFlight(s RunStatus, why string) {
	now := time.Now().UTC()
	for _, i := range append(slices.Clone(r.queue), r.redecide...) {
		ns := r.nodes[i]
		if !r.restartRetry[i] && len(ns.Decision) == 0 {
			continue // queued, never started: skipped with the rest at the end
		}
		r.stateMu.Lock()
		ns.Status, ns.Error, ns.FinishedAt, ns.Wait, ns.Decision = NodeFailed, string(s), &now, nil, nil
		r.stateMu.Unlock()
		r.markDirty(i)
		r.emit(r.plan.nodes[i].id, EvStepEnd, string(s), map[string]any{"status": NodeFailed, "error": string(s)})
	}
	r.redecide = nil
	if s == StatusCancelled && !r.cancelWarned {
		r.emit(SystemNodeID, EvWarning, cancelWarning(why), nil)
	}
	r.end(s, why)
	r.cancelLogged = ""
}

// endAsLogged applies the logged end (see keepLoggedEnd) once the logged
// completions were replayed: nodes take the ends the log gives them, the
// rest is skipped as the previous driver did, and settle writes the
// terminal state. Nothing more is logged: the log already tells all of it.
func (r *runner) endAsLogged() {
	r.emitMu.Lock()
	r.silent = true
	r.emitMu.Unlock()
	now := time.Now().UTC()
	for i, ns := range r.nodes {
		switch ns.Status {
		case NodeQueued, NodeRunning, NodeWaiting, NodePending:
		default:
			continue
		}
		rec := r.loggedSteps[ns.NodeID]
		switch {
		case rec != nil && rec.ended != nil && rec.ended.Status != NodeCompleted:
			r.stateMu.Lock()
			ns.Status, ns.Error, ns.FinishedAt, ns.Wait = rec.ended.Status, rec.ended.Error, &now, nil
			r.stateMu.Unlock()
			r.markDirty(i)
		case ns.Visits > 0 && (r.restartRetry[i] || ns.Status == NodeWaiting):
			// In flight at the end, its end not logged: as complete and
			// end would have ended it.
			r.stateMu.Lock()
			ns.Status, ns.Error, ns.FinishedAt, ns.Wait = NodeFailed, string(r.loggedEnd), &now, nil
			r.stateMu.Unlock()
			r.markDirty(i)
		}
	}
	r.queue, r.waiting, r.redecide = nil, nil, nil
	for _, i := range r.pending {
		r.inPending[i] = false
	}
	r.pending = r.pending[:0]
	r.ending, r.endReason = r.loggedEnd, r.loggedReason
	if r.endReason == "" && r.ending == StatusFailed {
		r.endReason = r.failSummary()
	}
	r.loggedSteps = nil
}

// load rebuilds a runner from the store and takes the run's lease.
// A failure after the lease was taken releases it again; pending reports
// that the store refused that release too (the caller retries it once the
// run no longer counts as loading, see releasePending).
func (e *Engine) load(ctx context.Context, runID string, kind reqKind) (r *runner, pending bool, err error) {
	run, err := e.store.GetRun(ctx, runID)
	if err != nil {
		return nil, false, err
	}
	if run.Status.Terminal() {
		return nil, false, fmt.Errorf("run %s is %s: %w", runID, run.Status, ErrTerminal)
	}
	switch kind {
	case reqDecision:
		if run.Status != StatusPaused {
			return nil, false, fmt.Errorf("run %s is %s: %w", runID, run.Status, ErrNotPaused)
		}
	case reqContinue:
		if run.Status == StatusPaused {
			return nil, false, fmt.Errorf("run %s is paused: answer its approval instead: %w", runID, ErrNotWaiting)
		}
	}
	now := time.Now()
	err = e.store.AcquireRun(ctx, runID, e.cfg.Owner, run.Status, now, now.Add(e.cfg.LeaseTTL))
	if errors.Is(err, ErrConflict) && e.reapDead(ctx) {
		// The holder may be a process of this machine that died: its
		// leases just ended, so try again instead of waiting them out.
		now = time.Now()
		err = e.store.AcquireRun(ctx, runID, e.cfg.Owner, run.Status, now, now.Add(e.cfg.LeaseTTL))
	}
	if err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, false, fmt.Errorf("run %s: %w: %w", runID, ErrDrivenElsewhere, err)
		}
		return nil, false, fmt.Errorf("run %s: take its lease: %w", runID, err)
	}
	// Driven here again: a release left pending by an earlier driver of
	// this process must not clear the new lease.
	e.unreleasedMu.Lock()
	delete(e.unreleased, runID)
	e.unreleasedMu.Unlock()
	run, nodes, lastSeq, err := e.store.LoadRun(ctx, runID)
	if err != nil {
		return nil, !e.releaseNow(context.WithoutCancel(ctx), runID), err
	}
	p, err := e.planFor(run)
	if err != nil {
		return nil, !e.releaseNow(context.WithoutCancel(ctx), runID), err
	}
	onLoad(p, run, nodes) // e.g. YAML always_run nodes run again on resume
	// The event log may be ahead of the node states (a completion reported
	// just before a crash): it is read so nothing reported is redone.
	evs, err := e.store.Events(ctx, runID, 0, 0)
	if err != nil {
		return nil, !e.releaseNow(context.WithoutCancel(ctx), runID), err
	}
	e.killLeftovers(runID, evs)
	log := readLog(evs)
	r = newRunner(e, p, run, nodes, lastSeq, log)
	r.keepLoggedEnd(evs, log)
	r.keepLoggedCancel(evs)
	r.restoreFork(evs)
	return r, false, nil
}

// Recover takes over runs whose owner died. With resume, they continue
// from their last persisted state; otherwise they are marked interrupted
// for the user to resume or cancel. It returns the ids it took.
func (e *Engine) Recover(ctx context.Context, resume bool) ([]string, error) {
	e.reapDead(ctx)
	var ids []string
	var err error
	claimed := false
	if oc, ok := e.store.(OrphanClaimer); ok && resume {
		claimed = true
		// Claimed in one statement that skips runs another process is
		// claiming: N processes recovering at once take disjoint sets
		// instead of racing for the same runs. A release left pending by
		// an earlier driver of this process must not end the claim before
		// the run is driven (another process could take it in between),
		// as it must not end the lease a reload takes (see load): the
		// claim and dropping those releases are one step for
		// releasePending (claimMu).
		e.claimMu.Lock()
		now := time.Now()
		ids, err = oc.ClaimOrphaned(ctx, e.cfg.Owner, now, now.Add(e.cfg.LeaseTTL), 0)
		e.unreleasedMu.Lock()
		for _, id := range ids {
			delete(e.unreleased, id)
		}
		e.unreleasedMu.Unlock()
		e.claimMu.Unlock()
		// A claimed run still live here has a driver that stalled past
		// its lease: it must not write under the new claim (its owner is
		// ours again), so it stops at once.
		e.mu.Lock()
		var stale []*runner
		for _, id := range ids {
			if r := e.live[id]; r != nil {
				stale = append(stale, r)
			}
		}
		e.mu.Unlock()
		for _, r := range stale {
			e.markLost(r)
		}
	} else {
		ids, err = e.store.ListOrphaned(ctx, time.Now())
	}
	if err != nil {
		return nil, err
	}
	var took []string
	for _, id := range ids {
		if resume {
			if _, err := e.deliver(ctx, id, request{kind: reqRecover}); err != nil {
				e.log.Warn("recover run", "run", id, "err", err)
				if claimed {
					// Leased to us but not driven: let it go, or our lease
					// renewals would keep it from everyone. As a pending
					// release: it is retried until the store takes it (the
					// database may be what failed the load), and it waits
					// for a load of the run here that is under way.
					e.addUnreleased(id)
					e.releasePending(ctx)
				}
				continue
			}
		} else if err := e.markInterrupted(ctx, id); err != nil {
			e.log.Warn("mark run interrupted", "run", id, "err", err)
			continue
		}
		took = append(took, id)
	}
	return took, nil
}

// OrphanClaimer is implemented by a store that can claim orphaned runs in
// one statement, skipping those another process is claiming (PostgreSQL's
// FOR UPDATE SKIP LOCKED). The claimed runs are leased to owner.
type OrphanClaimer interface {
	ClaimOrphaned(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]string, error)
}

// KeepRecovering calls Recover every fifth of a lease period until the
// engine closes: a run whose owner died takes up to a lease period to
// become orphaned, so a process restarted sooner than that (or another
// process sharing the database) must look again later, not only at
// start-up. Looking often bounds a takeover by a lease period and a fifth
// (leases alone decide across machines; see Config.Owners for this one).
func (e *Engine) KeepRecovering(resume bool) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		t := time.NewTicker(max(e.cfg.LeaseTTL/recoverPolls, time.Millisecond))
		defer t.Stop()
		// Owners known dead free their runs at once: look for them often.
		var dead <-chan time.Time
		if e.cfg.Owners != nil {
			dt := time.NewTicker(ownerPoll)
			defer dt.Stop()
			dead = dt.C
		}
		for {
			select {
			case <-e.stop:
				return
			case <-dead:
				if len(e.cfg.Owners.Dead()) == 0 {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), e.cfg.LeaseTTL)
				took, err := e.Recover(ctx, resume)
				cancel()
				if err != nil {
					e.log.Warn("recover runs of dead owners", "err", err)
				} else if len(took) > 0 {
					e.log.Info("took over the runs of dead owners", "count", len(took), "resume", resume)
				}
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), e.cfg.LeaseTTL)
				took, err := e.Recover(ctx, resume)
				cancel()
				if err != nil {
					e.log.Warn("recover orphaned runs", "err", err)
				} else if len(took) > 0 {
					e.log.Info("took over orphaned runs", "count", len(took), "resume", resume)
				}
			}
		}
	}()
}

// reapDead ends the leases of the owners known dead and reports whether
// there were any.
func (e *Engine) reapDead(ctx context.Context) bool {
	if e.cfg.Owners == nil {
		return false
	}
	freed := false
	for _, o := range e.cfg.Owners.Dead() {
		if o == e.cfg.Owner {
			continue
		}
		if err := e.store.ExpireLeases(ctx, o); err != nil {
			e.log.Warn("end the leases of a dead owner", "owner", o, "err", err)
			continue
		}
		e.log.Info("lease owner died: its runs are free", "owner", o)
		if err := e.cfg.Owners.Forget(o); err != nil {
			e.log.Warn("forget a dead owner", "owner", o, "err", err)
		}
		freed = true
	}
	return freed
}

func (e *Engine) markInterrupted(ctx context.Context, runID string) error {
	now := time.Now()
	if err := e.store.AcquireRun(ctx, runID, e.cfg.Owner, "", now, now.Add(e.cfg.LeaseTTL)); err != nil {
		return err
	}
	defer func() { _ = e.store.ReleaseRun(context.WithoutCancel(ctx), runID, e.cfg.Owner) }()
	run, _, lastSeq, err := e.store.LoadRun(ctx, runID)
	if err != nil {
		return err
	}
	if run.Status != StatusRunning && run.Status != StatusPending {
		return nil // paused with a claimed decision: left for the next resume
	}
	run.Status = StatusInterrupted
	run.UpdatedAt = now.UTC()
	run.Owner = e.cfg.Owner
	e.store.Emit(&Event{Seq: lastSeq + 1, RunID: runID, NodeID: SystemNodeID, Type: EvRunStatus,
		Content: string(StatusInterrupted), Timestamp: now.UTC(), Owner: e.cfg.Owner})
	return e.store.Checkpoint(ctx, run, nil)
}

// restore rebuilds a runner's state from what was persisted: node states
// and fired edges, then the queues, in node order; log (the step events)
// says which nodes completed without a checkpoint (replayed), which held a
// claimed decision (decided again) and which were in flight (run again,
// marked as a restart). A fresh run has neither.
func (r *runner) restore(states []*NodeState, log map[string]*stepRecord) {
	p, run := r.plan, r.run
	r.stepLog = log
	edgeIdx := make(map[string]int, len(p.edges))
	for i, ed := range p.edges {
		edgeIdx[ed.id] = i
	}
	waitOrder := map[string]int{}
	for i, pa := range run.PendingApprovals {
		waitOrder[pa.NodeID] = i
	}
	for _, st := range states {
		i, ok := p.index[st.NodeID]
		if !ok {
			continue
		}
		cp := *st
		r.nodes[i] = &cp
		for _, id := range st.Fired {
			if ei, ok := edgeIdx[id]; ok && !r.fired[ei] {
				r.fired[ei] = true
				r.firedCount[i]++
			}
		}
	}
	// Rebuild the queues from persisted statuses, in node order.
	for i, ns := range r.nodes {
		switch ns.Status {
		case NodePending:
			r.pending = append(r.pending, i)
			r.inPending[i] = true
		case NodeRunning, NodeQueued:
			rec := log[ns.NodeID]
			if rec != nil {
				if d, ok := rec.completed[ns.Visits]; ok {
					// Completed and reported, but not checkpointed: keep it.
					r.replay = append(r.replay, logged{idx: i, res: Result{Output: d.Output, Handle: d.Handle,
						Decided: d.Decided, Rejection: d.Rejection, CancelRun: d.CancelRun}})
					continue
				}
				if ns.Visits > 0 && rec.started == ns.Visits && rec.ended != nil && rec.ended.Status == NodeFailed {
					// Failed and reported, but not checkpointed: keep that
					// too. Run again, it could do its side effects twice,
					// and a run that fails fast was already ending.
					r.replayFailed = append(r.replayFailed, loggedFailure{idx: i, err: rec.ended.Error})
					continue
				}
			}
			if ns.Status == NodeRunning && len(ns.Decision) > 0 {
				// A human decision was claimed but not applied: apply it.
				r.redecide = append(r.redecide, i)
				continue
			}
			if rec != nil && rec.starts[ns.Visits] > ns.Attempts {
				ns.Attempts = rec.starts[ns.Visits] // attempts the log saw but no checkpoint did
			}
			// In flight when the owner stopped: run again, marked as a retry.
			r.restartRetry[i] = ns.Status == NodeRunning || ns.Attempts > 0 || (rec != nil && rec.started == ns.Visits)
			ns.Status = NodeQueued
			r.queue = append(r.queue, i)
		case NodeWaiting:
			r.waiting = append(r.waiting, i)
		}
	}
	// A busy node whose inputs fired again was notified while busy: its
	// status does not say it is pending too, its fired edges do.
	for i := range r.nodes {
		if r.firedCount[i] > 0 && !r.inPending[i] {
			r.pending = append(r.pending, i)
			r.inPending[i] = true
		}
	}
	sortByKey(r.waiting, func(i int) int {
		if o, ok := waitOrder[r.nodes[i].NodeID]; ok {
			return o
		}
		return len(waitOrder) + i
	})
}

// redo applies what restore found left to do when the loop begins: the
// logged completions, an end the log has but the store lacks, the claimed
// decisions. It reports whether the run ended as logged.
func (r *runner) redo() (ended bool) {
	for _, l := range r.replay {
		now := time.Now().UTC()
		ns := r.nodes[l.idx]
		r.stateMu.Lock()
		ns.Status = NodeCompleted
		ns.Output = l.res.Output
		ns.Handle = l.res.Handle
		ns.Decision = nil
		ns.Wait = nil
		ns.FinishedAt = &now
		r.stateMu.Unlock()
		r.markDirty(l.idx)
		if l.res.CancelRun == "" { // a cancelling result fires nothing: endInFlight
			r.fire(l.idx, l.res)
		}
	}
	r.replay = nil
	failFast := r.replayFailures()
	if r.loggedEnd != "" {
		r.endAsLogged()
		return true
	}
	if r.cancelLogged != "" {
		r.endInFlight(StatusCancelled, r.cancelLogged)
		return true
	}
	if failFast != "" {
		r.endInFlight(StatusFailed, failFast)
		return true
	}
	for _, i := range r.redecide {
		if _, ok := r.e.execs[r.plan.nodes[i].typ].(Resumer); ok {
			var d Decision
			_ = json.Unmarshal(r.nodes[i].Decision, &d)
			if r.applied == nil {
				r.applied = map[string]Decision{}
			}
			r.applied[r.nodes[i].NodeID] = d
			r.applyDecision(i)
		}
	}
	r.redecide = nil
	return false
}
