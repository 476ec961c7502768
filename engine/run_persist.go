package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// stepStartData and stepEndData are the data of the two most frequent
// events; structs marshal several times faster than maps. Fields are in
// alphabetical order, as a map's keys would be.
type stepStartData struct {
	Retry  string `json:"retry,omitempty"`
	Reused bool   `json:"reused,omitempty"` // a fork's node that takes its parent run's result
	Type   string `json:"type"`
	Visit  int    `json:"visit"`
}

type stepEndData struct {
	// CancelRun: the node's result ended the run as cancelled, with this
	// reason (a rejected YAML approval, a cancel node, a stopped loop). It
	// is logged with the completion, in the same write, so a driver that
	// dies before the end is saved leaves it to the next one (recovery
	// ends the run as cancelled instead of running on).
	CancelRun  string     `json:"cancelRun,omitempty"`
	Decided    bool       `json:"decided,omitempty"`
	DurationMs int64      `json:"durationMs"`
	Handle     string     `json:"handle,omitempty"`
	Output     string     `json:"output"`
	Rejection  *string    `json:"rejection,omitempty"` // set when decided, even if empty
	Status     NodeStatus `json:"status"`
	Visit      int        `json:"visit"`
}

// emit appends an event to the run's log. Safe from any goroutine.
func (r *runner) emit(nodeID, typ, content string, data any) {
	var raw json.RawMessage
	switch d := data.(type) {
	case nil:
	case json.RawMessage:
		raw = d
	case jsonAppender:
		raw = d.appendJSON(make([]byte, 0, 96))
	default:
		b, err := json.Marshal(d)
		if err == nil {
			raw = b
		}
	}
	r.emitRaw(nodeID, typ, content, raw)
}

// emitRaw is emit for data already encoded. The hot steps call it
// directly: a slice or a struct pointer boxed into emit's any costs an
// allocation per event.
func (r *runner) emitRaw(nodeID, typ, content string, raw json.RawMessage) {
	r.emitMu.Lock()
	if r.silent || r.leaseGone.Load() {
		r.emitMu.Unlock()
		return
	}
	r.seq++
	ev := &Event{Seq: r.seq, RunID: r.run.ID, NodeID: nodeID, Type: typ, Content: content,
		Timestamp: time.Now().UTC(), Data: raw, Owner: r.e.cfg.Owner}
	if r.keepLog {
		r.keep(ev)
	}
	if r.holding { // stored with the run itself (see prefix)
		r.held = append(r.held, ev)
		r.emitMu.Unlock()
		return
	}
	r.e.store.Emit(ev)
	for _, s := range r.e.cfg.Sinks {
		s.Emit(ev)
	}
	r.emitMu.Unlock()
}

// Caps of a kept log (StartOptions.KeepLog): a run that logs more is
// answered from the store instead.
const (
	keptEventsMax = 4096
	keptBytesMax  = 1 << 20
)

// keep adds ev to the kept log, or drops the kept log once it is over
// its caps. emitMu is held.
func (r *runner) keep(ev *Event) {
	r.keptBytes += len(ev.Content) + len(ev.Data) + len(ev.NodeID) + len(ev.Type) + 64
	if len(r.kept) >= keptEventsMax || r.keptBytes > keptBytesMax {
		r.keepLog, r.kept = false, nil
		return
	}
	if r.kept == nil {
		r.kept = make([]Event, 0, 16)
	}
	k := *ev
	// As the store gives it back: times in microseconds, no owner.
	k.Timestamp, k.Owner = k.Timestamp.Truncate(time.Microsecond), ""
	r.kept = append(r.kept, k)
}

func (r *runner) markDirty(i int) {
	if !r.isDirty[i] {
		r.isDirty[i] = true
		r.dirty = append(r.dirty, i)
	}
}

// header returns a copy of the run header.
func (r *runner) header() *Run {
	r.stateMu.RLock()
	defer r.stateMu.RUnlock()
	h := *r.run
	h.PendingApprovals = append([]PendingApproval{}, r.run.PendingApprovals...)
	return &h
}

func (r *runner) snapshot() (*Run, []*NodeState, error) {
	h := r.header()
	r.stateMu.RLock()
	defer r.stateMu.RUnlock()
	out := make([]*NodeState, len(r.nodes))
	for i, ns := range r.nodes {
		cp := *ns
		out[i] = &cp
	}
	return h, out, nil
}

// setStatus changes the run status and logs it.
func (r *runner) setStatus(s RunStatus) {
	r.stateMu.Lock()
	if r.run.Status == s {
		r.stateMu.Unlock()
		return
	}
	r.run.Status = s
	now := time.Now().UTC()
	r.run.UpdatedAt = now
	var data any
	if s.Terminal() {
		r.run.FinishedAt = &now
		if r.run.Error != "" {
			// Recovery reads why from the log when the end was logged but
			// not saved (keepLoggedEnd).
			data = runStatusData{Error: r.run.Error}
		}
	}
	r.stateMu.Unlock()
	r.emit(SystemNodeID, EvRunStatus, string(s), data)
}

// addUsage adds a model call's tokens to the run's totals. Safe from any
// goroutine; the next checkpoint (at the latest the node's completion)
// writes them with the header.
func (r *runner) addUsage(u Usage) {
	r.stateMu.Lock()
	r.run.Usage = r.run.Usage.Add(u)
	r.stateMu.Unlock()
}

// syncHeader derives the waiting fields of the header from the loop state.
func (r *runner) syncHeader() {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	r.run.WaitingForInput = len(r.waiting) > 0
	pas := make([]PendingApproval, 0, len(r.waiting))
	for _, i := range r.waiting {
		ns := r.nodes[i]
		var w waitRecord
		_ = json.Unmarshal(ns.Wait, &w)
		since := time.Time{}
		if ns.StartedAt != nil {
			since = *ns.StartedAt
		}
		if !w.Since.IsZero() {
			since = w.Since
		}
		pas = append(pas, PendingApproval{NodeID: ns.NodeID, Prompt: w.Prompt, Input: ns.Input, Since: since, Tool: w.Tool})
	}
	r.run.PendingApprovals = pas
	if len(r.waiting) > 0 {
		r.run.CurrentNodeID = r.nodes[r.waiting[0]].NodeID
	}
}

// waitRecord is what NodeState.Wait holds: the prompt and the executor's state.
type waitRecord struct {
	Prompt string          `json:"prompt"`
	Since  time.Time       `json:"since"`
	State  json.RawMessage `json:"state,omitempty"`
	Tool   *ToolApproval   `json:"tool,omitempty"`
}

// takeDirty copies the nodes changed since the last checkpoint (with their
// fired edges) and marks them clean; written lists their indexes.
func (r *runner) takeDirty() (nodes []*NodeState, written []int) {
	r.stateMu.RLock()
	nodes = make([]*NodeState, len(r.dirty))
	copies := make([]NodeState, len(r.dirty)) // one allocation for all the copies
	for k, i := range r.dirty {
		copies[k] = *r.nodes[i]
		copies[k].Fired = r.firedIDs(i)
		nodes[k] = &copies[k]
		r.isDirty[i] = false
	}
	r.stateMu.RUnlock()
	written = append([]int(nil), r.dirty...)
	r.dirty = r.dirty[:0]
	return nodes, written
}

// prefix takes a new run's first steps before it is stored: it begins the
// run and runs the pure nodes (start, if) its roots lead to, which never
// block. It returns the node states and events to store with the run, so
// they share its creation commit instead of a checkpoint right after it.
func (r *runner) prefix() ([]*NodeState, []*Event) {
	r.emitMu.Lock()
	r.holding = true
	r.emitMu.Unlock()
	if r.fork != nil {
		// First in the log: what recovery needs to finish the fork.
		r.emit(SystemNodeID, EvRunForked, fmt.Sprintf("forked from run %s at node %s", r.fork.ParentRunID, r.fork.FromNode), r.fork)
	}
	r.begin()
	r.evaluate()
	for r.ending == "" && r.status() == StatusRunning && r.dispatchWhere(isPure) {
		r.evaluate()
	}
	r.syncHeader()
	nodes, _ := r.takeDirty()
	r.headerChanged = false
	r.emitMu.Lock()
	r.holding = false
	events := r.held
	r.held = nil
	r.emitMu.Unlock()
	return nodes, events
}

// checkpoint persists the header and the nodes changed since the last one.
func (r *runner) checkpoint() error {
	if r.leaseGone.Load() {
		return fmt.Errorf("%w: %w", ErrConflict, ErrLeaseLost)
	}
	if len(r.dirty) == 0 && !r.headerDirty() {
		return nil
	}
	r.syncHeader()
	h := r.header()
	nodes, written := r.takeDirty()
	h.UpdatedAt = time.Now().UTC()
	h.SameStatus = h.Status == r.savedStatus && !h.Status.Terminal()
	ctx, cancel := r.saveDL.ctx()
	defer cancel()
	err := r.e.store.Checkpoint(ctx, h, nodes)
	if err == nil {
		r.savedStatus = h.Status
		r.pausedSaved.Store(h.Status == StatusPaused)
	}
	if err != nil {
		// Nothing was written: keep the changes for the next try.
		for _, i := range written {
			r.markDirty(i)
		}
		r.saveFailed = true
	}
	return err
}

// saveTimeout bounds a checkpoint: a store that does not answer by then
// fails it (and the runner retries), so a wedged database holds no run
// forever.
const saveTimeout = 30 * time.Second

// saveDeadline is the context a runner's checkpoints share: a deadline
// between two thirds of saveTimeout and saveTimeout away, made again only
// when less is left. A context.WithTimeout per checkpoint started and
// stopped a timer each time and was 4 of an agent step's allocations, and
// the write queue's wait on its Done 1 more.
type saveDeadline struct {
	mu       sync.Mutex
	c        context.Context
	cancel   context.CancelFunc
	until    time.Time
	released bool
}

// ctx returns the context for one checkpoint and what to call after it.
func (d *saveDeadline) ctx() (context.Context, context.CancelFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if d.released {
		// After the loop: nothing would cancel a shared one.
		return context.WithTimeout(context.Background(), saveTimeout)
	}
	if d.c == nil || d.until.Sub(now) < saveTimeout*2/3 {
		if d.cancel != nil {
			d.cancel()
		}
		d.until = now.Add(saveTimeout)
		d.c, d.cancel = context.WithDeadline(context.Background(), d.until)
	}
	return d.c, func() {}
}

// release stops the shared context's timer: the runner's loop ended.
func (d *saveDeadline) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		d.cancel()
	}
	d.c, d.cancel, d.released = nil, nil, true
}

// headerDirty is true when the header changed without a node changing.
func (r *runner) headerDirty() bool { return r.headerChanged }

// persist writes a checkpoint when anything changed. Every node completion
// is durable before the nodes it activates start.
// inFlightPersistDelay: a node still running this long after it started
// has its running state committed, so other processes see it in flight.
// Quicker nodes commit it together with their result.
const inFlightPersistDelay = 20 * time.Millisecond

func (e *Engine) flushDelay() time.Duration {
	if e.inFlightDelay > 0 {
		return e.inFlightDelay
	}
	return inFlightPersistDelay
}

func (r *runner) persist() error {
	r.disarmFlush()
	r.saveFailed = false
	err := r.checkpoint()
	if !r.saveFailed {
		r.headerChanged = false
		r.saved()
	}
	r.impureDone = false
	return err
}

// save persists and reports whether it committed; a failure goes to
// failStore.
func (r *runner) save() bool {
	if err := r.persist(); err != nil {
		r.failStore(err)
		return false
	}
	return true
}

// Retries of a checkpoint the store refused: the first comes soon (a
// busy database, a connection being re-established), later ones back off.
const (
	storeRetryFirst = 50 * time.Millisecond
	storeRetryMax   = 5 * time.Second
)

// failStore handles a checkpoint the store refused. A refusal that says
// someone else decides now (a lost lease, a run that ended or vanished
// elsewhere) stops this driver at once, writing nothing more. Any other
// failure (disk full, database locked, a database restarting) does not
// end the run: a run cannot even record that it failed while nothing can
// be written, and a "failed" end that could not be saved would be undone
// by recovery. The changes stay dirty, nothing new starts (a completion is
// durable before what it activates starts) and the checkpoint is retried
// with backoff. If the store stays away for a lease period, this process
// cannot keep its lease either: it stops driving the run, as when the
// lease is lost, and recovery (here or in another process) resumes it
// from what was saved.
func (r *runner) failStore(err error) {
	switch {
	case errors.Is(err, ErrConflict):
		r.loseLease(err)
		return
	case errors.Is(err, ErrTerminal), errors.Is(err, ErrNotFound):
		r.letGo(err, "the run ended or vanished in the store; stopping here")
		return
	}
	now := time.Now()
	if r.storeDownSince.IsZero() {
		r.storeDownSince = now
		r.storeRetry = storeRetryFirst
	} else {
		r.storeRetry = min(2*r.storeRetry, storeRetryMax)
	}
	if r.e.leaseStale() || now.Sub(r.storeDownSince) > r.e.cfg.LeaseTTL {
		r.letGo(err, "cannot save the run's state for a lease period; leaving it to recovery")
		return
	}
	r.e.log.Error("persist run state; retrying", "run", r.run.ID, "err", err, "retry_in", r.storeRetry)
	r.armFlush(r.storeRetry)
}

// armFlush makes the loop's wait end after d (see runner.flushT). Since Go
// 1.23 a timer stopped or reset delivers nothing of its earlier arming.
func (r *runner) armFlush(d time.Duration) {
	if r.flushT == nil {
		r.flushT = time.NewTimer(d)
	} else {
		r.flushT.Reset(d)
	}
	r.flushArmed = true
}

// disarmFlush stops the timer armFlush set, if it is armed.
func (r *runner) disarmFlush() {
	if r.flushArmed {
		r.flushT.Stop()
		r.flushArmed = false
	}
}

// saved notes a checkpoint that committed: the store is back, and nodes
// waiting in Sync for their events to be durable may go on.
func (r *runner) saved() {
	if !r.storeDownSince.IsZero() {
		r.e.log.Info("run state saved again", "run", r.run.ID, "after", time.Since(r.storeDownSince).Round(time.Millisecond))
		r.storeDownSince, r.storeRetry = time.Time{}, 0
	}
	r.answerSyncs(nil)
}

// answerSyncs replies to the Sync requests that waited for a checkpoint.
func (r *runner) answerSyncs(err error) {
	for _, c := range r.syncWaiters {
		c <- reply{err: err}
	}
	r.syncWaiters = nil
}

// letGo stops driving the run without writing anything more: running
// nodes are cancelled and left as they were saved, for the next driver to
// run again. The lease may still be this process's (a stale one, not a
// takeover): tryExit releases it once the store is back.
func (r *runner) letGo(err error, why string) {
	if r.lost {
		return
	}
	r.e.log.Warn(why, "run", r.run.ID, "err", err)
	r.lost = true
	r.stopping = true
	r.answerSyncs(fmt.Errorf("%w: %s", ErrLeaseLost, why))
	r.cancel()
	// Go round the loop again, where a stopping run with nothing running
	// exits, even if nothing else happens.
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *runner) loseLease(err error) {
	r.letGo(err, "run taken over by another process; stopping here")
}
