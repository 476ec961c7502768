package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

type reqKind int

const (
	reqDecision reqKind = iota
	reqContinue
	reqCancel
	reqShutdown
	reqRecover // take over an orphaned run, whatever its status
)

// request is something asked of a run's loop from outside it.
type request struct {
	kind     reqKind
	nodeID   string
	decision Decision
	reply    chan reply
}

type reply struct {
	run *Run
	err error
}

// nodeDone is an executor's result coming back to the loop.
type nodeDone struct {
	idx     int
	res     Result
	err     error
	elapsed time.Duration
}

// runner drives one run. Its loop goroutine owns all scheduling state; the
// only state shared with executors and readers is guarded by stateMu (node
// states and the header) and emitMu (event seq).
type runner struct {
	e    *Engine
	plan *plan

	stateMu sync.RWMutex
	run     *Run
	nodes   []*NodeState

	emitMu sync.Mutex
	seq    int64

	// Loop-owned scheduling state.
	fired        []bool // per edge: fired for its target's next visit
	firedCount   []int  // per node: how many incoming edges fired
	pending      []int  // nodes notified but not yet decided, oldest first
	inPending    []bool
	queue        []int // decided to run, waiting for a slot or for resume
	waiting      []int // nodes waiting for a human, oldest first
	running      int
	dirty        []int
	isDirty      []bool
	restartRetry []bool    // queued again after the previous owner died
	ending       RunStatus // failed or cancelled once decided; loop drains then ends
	endReason    string
	stopping     bool        // engine shutdown: drain, persist nothing more, keep run resumable
	hdrDirty     bool        // the header changed since the last checkpoint
	kicked       bool        // something completed this iteration: go round again
	lost         bool        // another process took the run over: write nothing more
	impureDone   bool        // a non-pure node settled since the last checkpoint
	flushT       *time.Timer // armed after a dispatch: commit in-flight state if still running
	saveFailed   bool        // the last checkpoint failed; hdrDirty is kept
	finished     bool        // the terminal checkpoint committed, which released the run
	begun        bool        // begin ran
	holding      bool        // emit keeps events in held (guarded by emitMu)
	held         []*Event    // events of prefix, stored with the run
	redecide     []int       // claimed decisions a crash left unapplied
	replay       []logged
	applied      map[string]Decision // decisions re-applied after a crash, by node
	inlineDone   []nodeDone
	cancels      map[int]context.CancelFunc
	ctx          context.Context
	cancel       context.CancelFunc
	done         chan nodeDone

	inboxMu sync.Mutex
	inbox   []request
	gone    bool // loop has exited; post must fail
	wake    chan struct{}
	exited  chan struct{}
}

// logged is a node completion found in the event log but not in the node
// states: the process died between the two writes. The log wins.
type logged struct {
	idx int
	res Result
}

// stepRecord is what the event log says about a node's latest visit.
type stepRecord struct {
	started   int         // visit of the last step_start
	starts    map[int]int // step_starts per visit: the attempts made
	completed map[int]stepEnd
}

type stepEnd struct {
	Status    NodeStatus `json:"status"`
	Output    string     `json:"output"`
	Handle    string     `json:"handle"`
	Visit     int        `json:"visit"`
	Decided   bool       `json:"decided"`
	Rejection string     `json:"rejection"`
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
		} else if d.Status == NodeCompleted && d.Visit > 0 {
			rec.completed[d.Visit] = d
		}
	}
	return out
}

func newRunner(e *Engine, p *plan, run *Run, states []*NodeState, lastSeq int64, log map[string]*stepRecord) *runner {
	n := len(p.nodes)
	r := &runner{
		e: e, plan: p, run: run, seq: lastSeq,
		nodes:        make([]*NodeState, n),
		fired:        make([]bool, len(p.edges)),
		firedCount:   make([]int, n),
		inPending:    make([]bool, n),
		isDirty:      make([]bool, n),
		restartRetry: make([]bool, n),
		cancels:      make(map[int]context.CancelFunc),
		done:         make(chan nodeDone, min(n, 64)), // never more in flight than nodes; a full channel only makes a node wait
		wake:         make(chan struct{}, 1),
		exited:       make(chan struct{}),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	run.Owner = e.cfg.Owner
	for i, pn := range p.nodes {
		r.nodes[i] = &NodeState{NodeID: pn.id}
	}
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
						Decided: d.Decided, Rejection: d.Rejection}})
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
	return r
}

func sortByKey(s []int, key func(int) int) {
	for i := 1; i < len(s); i++ { // insertion sort: lists are tiny
		for j := i; j > 0 && key(s[j]) < key(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// post queues a request for the loop; false if the loop has exited.
func (r *runner) post(req request) bool {
	r.inboxMu.Lock()
	if r.gone {
		r.inboxMu.Unlock()
		return false
	}
	r.inbox = append(r.inbox, req)
	r.inboxMu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return true
}

func (r *runner) shutdown() {
	if !r.post(request{kind: reqShutdown, reply: make(chan reply, 1)}) {
		return
	}
}

// stepStartData and stepEndData are the data of the two most frequent
// events; structs marshal several times faster than maps. Fields are in
// alphabetical order, as a map's keys would be.
type stepStartData struct {
	Retry string `json:"retry,omitempty"`
	Type  string `json:"type"`
	Visit int    `json:"visit"`
}

type stepEndData struct {
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
	default:
		b, err := json.Marshal(d)
		if err == nil {
			raw = b
		}
	}
	r.emitMu.Lock()
	r.seq++
	ev := &Event{Seq: r.seq, RunID: r.run.ID, NodeID: nodeID, Type: typ, Content: content,
		Timestamp: time.Now().UTC(), Data: raw, Owner: r.e.cfg.Owner}
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
	if s.Terminal() {
		r.run.FinishedAt = &now
	}
	r.stateMu.Unlock()
	r.emit(SystemNodeID, EvRunStatus, string(s), nil)
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
		pas = append(pas, PendingApproval{NodeID: ns.NodeID, Prompt: w.Prompt, Input: ns.Input, Since: since})
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
}

// takeDirty copies the nodes changed since the last checkpoint (with their
// fired edges) and marks them clean; written lists their indexes.
func (r *runner) takeDirty() (nodes []*NodeState, written []int) {
	r.stateMu.RLock()
	nodes = make([]*NodeState, 0, len(r.dirty))
	for _, i := range r.dirty {
		cp := *r.nodes[i]
		cp.Fired = r.firedIDs(i)
		nodes = append(nodes, &cp)
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
	r.begin()
	r.evaluate()
	for r.ending == "" && r.status() == StatusRunning && r.dispatchWhere(isPure) {
		r.evaluate()
	}
	r.syncHeader()
	nodes, _ := r.takeDirty()
	r.hdrDirty = false
	r.emitMu.Lock()
	r.holding = false
	events := r.held
	r.held = nil
	r.emitMu.Unlock()
	return nodes, events
}

// checkpoint persists the header and the nodes changed since the last one.
func (r *runner) checkpoint() error {
	if len(r.dirty) == 0 && !r.headerDirty() {
		return nil
	}
	r.syncHeader()
	h := r.header()
	nodes, written := r.takeDirty()
	h.UpdatedAt = time.Now().UTC()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := r.e.store.Checkpoint(ctx, h, nodes)
	if err != nil {
		// Nothing was written: keep the changes for the next try.
		for _, i := range written {
			r.markDirty(i)
		}
		r.saveFailed = true
	}
	return err
}

// headerDirty is true when the header changed without a node changing.
func (r *runner) headerDirty() bool { return r.hdrDirty }

func (r *runner) firedIDs(i int) []string {
	if r.firedCount[i] == 0 {
		return nil
	}
	ids := make([]string, 0, r.firedCount[i])
	for _, ei := range r.plan.in[i] {
		if r.fired[ei] {
			ids = append(ids, r.plan.edges[ei].id)
		}
	}
	return ids
}

// loop is the run's scheduler: one goroutine, events in, nodes out.
func (r *runner) loop() {
	defer r.cancel()
	r.begin()
	for {
		r.drainInbox()
		if r.stopping {
			if r.running == 0 && r.tryExit() {
				return
			}
		} else {
			r.evaluate()
			// With nothing running or left to start, settle below writes
			// the run's end or pause, and the last completions with it:
			// one commit instead of two at the end of every run.
			settling := r.running == 0 && len(r.queue) == 0 && len(r.pending) == 0
			// Pure nodes (start, if) are deterministic functions of their
			// input, so a chain of them may share one checkpoint: after a
			// crash they are computed again. Anything else that completed is
			// made durable first, and nothing impure starts before the pure
			// results are durable too.
			if r.impureDone && !settling {
				if err := r.persist(); err != nil {
					r.failStore(err)
				}
			}
			for r.ending == "" && r.status() == StatusRunning && r.dispatchWhere(isPure) {
				r.evaluate()
			}
			if !settling {
				if err := r.persist(); err != nil {
					r.failStore(err)
				}
			}
			if r.ending == "" && r.status() == StatusRunning {
				r.dispatch()
			}
			if r.running > 0 && len(r.dirty) > 0 && r.flushT == nil {
				r.flushT = time.NewTimer(inFlightPersistDelay)
			}
			if r.running == 0 && r.settle() && r.tryExit() {
				return
			}
		}
		if r.kicked {
			r.kicked = false
			continue
		}
		var flushC <-chan time.Time
		if r.flushT != nil {
			flushC = r.flushT.C
		}
		select {
		case <-flushC:
			r.flushT = nil
			if !r.stopping {
				if err := r.persist(); err != nil {
					r.failStore(err)
				}
			}
		case d := <-r.done:
			r.complete(d)
			for more := true; more; { // batch whatever else finished: one checkpoint
				select {
				case d := <-r.done:
					r.complete(d)
				default:
					more = false
				}
			}
			// The loop top handles these completions; kicked is only for
			// inline completions after dispatch. (Going round again would
			// commit the state of nodes just dispatched: an extra commit per
			// step that recovery does not need, as the event log shows
			// which nodes were in flight.)
			r.kicked = false
		case <-r.wake:
		}
	}
}

func (r *runner) status() RunStatus {
	r.stateMu.RLock()
	defer r.stateMu.RUnlock()
	return r.run.Status
}

// begin moves a fresh or recovered run to running (or keeps it paused),
// once (prefix may have done it before the loop starts).
func (r *runner) begin() {
	if r.begun {
		return
	}
	r.begun = true
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
		r.fire(l.idx, l.res)
	}
	r.replay = nil
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
	if r.running > 0 {
		return
	}
	if len(r.waiting) > 0 && len(r.queue) == 0 {
		r.syncHeader()
		if r.status() != StatusPaused {
			r.setStatus(StatusPaused)
			r.hdrDirty = true
		}
		return
	}
	if len(r.waiting) > 0 {
		r.setStatus(StatusPaused)
	} else {
		r.setStatus(StatusRunning)
	}
	r.hdrDirty = true
}

// persist writes a checkpoint when anything changed. Every node completion
// is durable before the nodes it activates start.
// inFlightPersistDelay: a node still running this long after it started
// has its running state committed, so other processes see it in flight.
// Quicker nodes commit it together with their result.
const inFlightPersistDelay = 20 * time.Millisecond

func (r *runner) persist() error {
	if r.flushT != nil {
		r.flushT.Stop()
		r.flushT = nil
	}
	r.saveFailed = false
	err := r.checkpoint()
	if !r.saveFailed {
		r.hdrDirty = false
	}
	r.impureDone = false
	return err
}

// failStore ends a run whose state can no longer be written. A lost lease
// is different: another process drives the run now, so this one stops
// without writing anything more.
func (r *runner) failStore(err error) {
	if errors.Is(err, ErrConflict) {
		r.loseLease(err)
		return
	}
	r.e.log.Error("persist run state", "run", r.run.ID, "err", err)
	if r.ending != "" {
		return // already ending (a retry of the final save): said once
	}
	r.emit(SystemNodeID, EvError, "cannot persist run state: "+err.Error(), nil)
	r.end(StatusFailed, "cannot persist run state: "+err.Error())
}

func (r *runner) loseLease(err error) {
	if r.lost {
		return
	}
	r.e.log.Warn("run taken over by another process; stopping here", "run", r.run.ID, "err", err)
	r.lost = true
	r.stopping = true
	r.cancel()
}

// settle decides what a loop with nothing running does next; true means
// the run left the loop's responsibility (paused, ended) and may exit.
func (r *runner) settle() bool {
	if r.ending != "" {
		return r.finish(r.ending, r.endReason)
	}
	if len(r.waiting) > 0 {
		if r.status() != StatusPaused {
			r.setStatus(StatusPaused)
			r.hdrDirty = true
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

// finish records a terminal status durably.
// finish records a terminal status durably. It reports false when the
// store refused the write (disk full, locked): the loop then keeps the run
// and tries again, rather than leaving it "running" in the database.
func (r *runner) finish(s RunStatus, reason string) bool {
	if r.finished {
		return true // a request kept the loop going after the end: it is said
	}
	r.stateMu.Lock()
	r.run.Error = reason
	r.run.WaitingForInput = false
	r.stateMu.Unlock()
	r.waiting = nil
	if s == StatusFailed || s == StatusCancelled {
		r.skipUndecided("run " + string(s))
	}
	r.setStatus(s)
	r.hdrDirty = true
	if err := r.persist(); err != nil {
		if errors.Is(err, ErrConflict) {
			r.loseLease(err)
			return true
		}
		if r.e.leaseStale() {
			// Leases have not been renewed for a lease period: another
			// process may own the run by now. Stop; recovery finishes it.
			r.e.log.Error("persist final run state; lease stale, leaving the run to recovery", "run", r.run.ID, "err", err)
			r.lost = true
			return true
		}
		r.e.log.Error("persist final run state; retrying", "run", r.run.ID, "err", err)
		if r.flushT == nil {
			r.flushT = time.NewTimer(time.Second)
		}
		return false
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
	if e.live[r.run.ID] == r {
		delete(e.live, r.run.ID)
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
	close(r.exited)
	return true
}

func (r *runner) drainInbox() {
	r.inboxMu.Lock()
	reqs := r.inbox
	r.inbox = nil
	r.inboxMu.Unlock()
	for _, req := range reqs {
		r.handle(req)
	}
}

func (r *runner) handle(req request) {
	if r.stopping && req.kind != reqShutdown {
		req.reply <- reply{err: errors.New("engine is shutting down")}
		return
	}
	switch req.kind {
	case reqShutdown:
		r.stopping = true
		r.cancel()
		req.reply <- reply{}
	case reqCancel:
		if r.ending == "" && !r.status().Terminal() {
			r.emit(SystemNodeID, EvWarning, "run cancelled by user", nil)
			r.end(StatusCancelled, "cancelled by user")
		}
		if r.running == 0 {
			r.finish(r.ending, r.endReason)
		}
		req.reply <- reply{run: r.header()}
	case reqContinue, reqRecover:
		if req.kind == reqContinue && r.status() == StatusPaused {
			// As load says when the loop has already left: a paused run
			// continues through its approval, not through Continue.
			req.reply <- reply{err: fmt.Errorf("run %s is paused: answer its approval instead: %w", r.run.ID, ErrNotWaiting)}
			return
		}
		if s := r.status(); s == StatusInterrupted || s == StatusPending {
			r.setStatus(StatusRunning)
			r.hdrDirty = true
		}
		req.reply <- reply{run: r.header()}
	case reqDecision:
		run, err := r.decide(req.nodeID, req.decision)
		req.reply <- reply{run: run, err: err}
	}
}

// decide applies a human decision to a waiting node.
func (r *runner) decide(nodeID string, d Decision) (*Run, error) {
	if r.ending != "" || r.status().Terminal() {
		return nil, fmt.Errorf("run %s: %w", r.run.ID, ErrTerminal)
	}
	if nodeID == "" {
		if len(r.waiting) != 1 {
			return nil, fmt.Errorf("run %s has %d nodes waiting: name one: %w", r.run.ID, len(r.waiting), ErrNotWaiting)
		}
		nodeID = r.nodes[r.waiting[0]].NodeID
	}
	i, ok := r.plan.index[nodeID]
	if ok && r.nodes[i].Status != NodeWaiting {
		if prev, was := r.applied[nodeID]; was && prev.Decision == d.Decision {
			// The same answer, retried after a crash that kept the first one.
			return r.header(), nil
		}
	}
	if !ok || r.nodes[i].Status != NodeWaiting {
		return nil, fmt.Errorf("node %q of run %s: %w", nodeID, r.run.ID, ErrNotWaiting)
	}
	if _, ok := r.e.execs[r.plan.nodes[i].typ].(Resumer); !ok {
		return nil, fmt.Errorf("node %q cannot be resumed", nodeID)
	}
	dec, _ := json.Marshal(d)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The claim is the compare-and-swap that makes exactly one answer win,
	// and it stores the answer: a crash right after cannot lose it.
	if err := r.e.store.ClaimWaitingNode(ctx, r.run.ID, nodeID, r.e.cfg.Owner, dec); err != nil {
		return nil, fmt.Errorf("node %q of run %s: %w", nodeID, r.run.ID, err)
	}
	r.removeWaiting(i)
	r.stateMu.Lock()
	r.nodes[i].Status = NodeRunning
	r.nodes[i].Decision = dec
	r.stateMu.Unlock()
	r.applyDecision(i)
	return r.header(), nil
}

// applyDecision resumes a node whose decision has been claimed.
func (r *runner) applyDecision(i int) {
	ns := r.nodes[i]
	var d Decision
	_ = json.Unmarshal(ns.Decision, &d)
	var w waitRecord
	_ = json.Unmarshal(ns.Wait, &w)
	r.stateMu.Lock()
	ns.Wait = nil
	r.stateMu.Unlock()
	r.markDirty(i)
	if len(r.waiting) == 0 && r.ending == "" {
		r.setStatus(StatusRunning)
	}
	r.syncHeader()
	r.hdrDirty = true
	ex := r.e.execs[r.plan.nodes[i].typ].(Resumer)
	x := r.exec(i)
	x.WaitState = w.State
	r.running++
	r.launch(i, x, func(ctx context.Context) (Result, error) { return ex.Resume(ctx, x, d) })
	r.applyInline()
}

func (r *runner) removeWaiting(i int) {
	for k, w := range r.waiting {
		if w == i {
			r.waiting = append(r.waiting[:k], r.waiting[k+1:]...)
			return
		}
	}
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

func (r *runner) exec(i int) *Exec {
	ns := r.nodes[i]
	return &Exec{r: r, node: r.plan.nodes[i], idx: i, Input: ns.Input, Visit: ns.Visits,
		Attempt: ns.Attempts, Rejection: ns.Rejection}
}

// enqueue decides that node i runs with input.
func (r *runner) enqueue(i int, input, rejection string) {
	ns := r.nodes[i]
	if ns.Visits >= r.plan.maxVisits {
		msg := fmt.Sprintf("%s would run more than maxVisits (%d) times", r.plan.nodes[i].label, r.plan.maxVisits)
		r.emit(r.plan.nodes[i].id, EvError, msg, nil)
		r.end(StatusFailed, msg)
		return
	}
	r.stateMu.Lock()
	ns.Status = NodeQueued
	ns.Input = input
	ns.Rejection = rejection
	ns.Visits++
	ns.Attempts = 0 // attempts are per visit: a new one was never started (see newRunner's restartRetry)
	ns.Error = ""
	r.stateMu.Unlock()
	r.queue = append(r.queue, i)
	r.markDirty(i)
}

// pure marks executors without side effects whose result depends only on
// their input.
type pure interface{ pure() }

func isPure(x Executor) bool { _, ok := x.(pure); return ok }

// dispatch starts queued nodes up to the per-run cap.
func (r *runner) dispatch() { r.dispatchWhere(nil) }

// dispatchWhere starts the queued nodes whose executor passes keep (all
// when nil), up to the per-run cap; it reports whether it started any.
func (r *runner) dispatchWhere(keep func(Executor) bool) bool {
	started := false
	for k := 0; k < len(r.queue) && r.running < r.e.cfg.MaxParallel && r.ending == "" && r.status() == StatusRunning; {
		i := r.queue[k]
		if keep != nil {
			if x, ok := r.e.execs[r.plan.nodes[i].typ]; !ok || !keep(x) {
				k++
				continue
			}
		}
		r.queue = append(r.queue[:k], r.queue[k+1:]...)
		started = true
		pn := r.plan.nodes[i]
		ex, ok := r.e.execs[pn.typ]
		ns := r.nodes[i]
		now := time.Now().UTC()
		r.stateMu.Lock()
		ns.Status = NodeRunning
		ns.Attempts++
		ns.StartedAt = &now
		ns.FinishedAt = nil
		r.run.CurrentNodeID = pn.id
		r.stateMu.Unlock()
		r.markDirty(i)
		data := &stepStartData{Type: pn.typ, Visit: ns.Visits}
		if r.restartRetry[i] {
			data.Retry = "restart"
			r.restartRetry[i] = false
		}
		r.emit(pn.id, EvStepStart, pn.describe, data)
		r.running++
		if !ok {
			r.inlineDone = append(r.inlineDone, nodeDone{idx: i, err: fmt.Errorf("no executor for node type %q", pn.typ)})
			continue
		}
		x := r.exec(i)
		r.launch(i, x, func(ctx context.Context) (Result, error) { return ex.Execute(ctx, x) })
	}
	r.applyInline()
	return started
}

func (r *runner) applyInline() {
	for len(r.inlineDone) > 0 {
		d := r.inlineDone[0]
		r.inlineDone = r.inlineDone[1:]
		r.complete(d)
	}
}

// launch runs fn for node i: inline for executors that never block,
// otherwise on its own goroutine reporting back through r.done.
func (r *runner) launch(i int, x *Exec, fn func(ctx context.Context) (Result, error)) {
	if _, ok := r.e.execs[x.node.typ].(inliner); ok {
		// Applied after the whole batch is started, so nodes dispatched
		// together behave as if they ran at the same time (an approval
		// pausing the run does not hold back its ready siblings).
		start := time.Now()
		res, err := fn(r.ctx)
		r.inlineDone = append(r.inlineDone, nodeDone{idx: i, res: res, err: err, elapsed: time.Since(start)})
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	r.cancels[i] = cancel
	go func() {
		start := time.Now()
		res, err := safeCall(ctx, fn)
		r.done <- nodeDone{idx: i, res: res, err: err, elapsed: time.Since(start)}
	}()
}

// safeCall turns an executor panic into a node error.
func safeCall(ctx context.Context, fn func(ctx context.Context) (Result, error)) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v", p)
		}
	}()
	return fn(ctx)
}

// complete applies a node's result.
func (r *runner) complete(d nodeDone) {
	r.kicked = true
	if x, ok := r.e.execs[r.plan.nodes[d.idx].typ]; !ok || !isPure(x) {
		r.impureDone = true
	}
	r.running--
	if c, ok := r.cancels[d.idx]; ok {
		c()
		delete(r.cancels, d.idx)
	}
	i := d.idx
	ns := r.nodes[i]
	pn := r.plan.nodes[i]
	if r.stopping {
		return // left as running: the next owner runs it again
	}
	now := time.Now().UTC()
	if r.ending != "" {
		// Cancelled by fail-fast or by the user; its result no longer counts.
		r.stateMu.Lock()
		ns.Status = NodeFailed
		ns.Error = string(r.ending)
		ns.FinishedAt = &now
		r.stateMu.Unlock()
		r.markDirty(i)
		r.emit(pn.id, EvStepEnd, string(r.ending), map[string]any{"status": NodeFailed, "error": string(r.ending)})
		return
	}
	if d.err != nil {
		msg := d.err.Error()
		r.stateMu.Lock()
		ns.Status = NodeFailed
		ns.Error = msg
		ns.FinishedAt = &now
		r.stateMu.Unlock()
		r.markDirty(i)
		r.emit(pn.id, EvError, msg, nil)
		r.emit(pn.id, EvStepEnd, "failed", map[string]any{"status": NodeFailed, "error": msg,
			"durationMs": d.elapsed.Milliseconds()})
		if r.plan.failFast {
			r.end(StatusFailed, fmt.Sprintf("%s failed: %s", pn.label, msg))
			return
		}
		r.notifyOut(i, "")
		return
	}
	res := d.res
	if len(ns.Decision) > 0 {
		r.stateMu.Lock()
		ns.Decision = nil // applied: its result is what the checkpoint keeps
		r.stateMu.Unlock()
	}
	if res.Wait != nil {
		prompt := res.Wait.Prompt
		rec, _ := json.Marshal(waitRecord{Prompt: prompt, Since: now, State: res.Wait.State})
		r.stateMu.Lock()
		ns.Status = NodeWaiting
		ns.Wait = rec
		r.stateMu.Unlock()
		r.waiting = append(r.waiting, i)
		r.markDirty(i)
		r.emit(pn.id, EvWaitInput, prompt, map[string]any{"input": ns.Input})
		if r.status() != StatusPaused {
			r.setStatus(StatusPaused)
		}
		r.syncHeader()
		r.hdrDirty = true
		return
	}
	r.stateMu.Lock()
	ns.Status = NodeCompleted
	ns.Output = res.Output
	ns.Handle = res.Handle
	ns.FinishedAt = &now
	r.stateMu.Unlock()
	r.markDirty(i)
	data := &stepEndData{Status: NodeCompleted, Output: res.Output, Visit: ns.Visits,
		DurationMs: d.elapsed.Milliseconds(), Handle: res.Handle}
	if res.Decided {
		data.Decided = true
		data.Rejection = &res.Rejection
	}
	r.emit(pn.id, EvStepEnd, "completed", data)
	if res.CancelRun != "" {
		r.emit(SystemNodeID, EvWarning, "run cancelled: "+res.CancelRun, nil)
		r.end(StatusCancelled, res.CancelRun)
		return
	}
	r.fire(i, res)
}

// fire activates the outgoing edges matching the node's handle and
// notifies the targets of the others.
func (r *runner) fire(i int, res Result) {
	handle := res.Handle
	if handle == "" && r.plan.kind == KindGraph {
		handle = "output"
	}
	matched := false
	for _, ei := range r.plan.out[i] {
		ed := r.plan.edges[ei]
		if ed.handle == "" || ed.handle == handle {
			matched = true
			if !r.fired[ei] {
				r.fired[ei] = true
				r.firedCount[ed.dst]++
				r.markDirty(ed.dst) // its persisted inputs changed
			}
			// The rejection note travels with the activation: a decision
			// node sets it, every other node passes on its own.
			rej := r.nodes[i].Rejection
			if res.Decided {
				rej = res.Rejection
			}
			if r.nodes[ed.dst].Rejection != rej {
				r.stateMu.Lock()
				r.nodes[ed.dst].Rejection = rej
				r.stateMu.Unlock()
				r.markDirty(ed.dst) // persisted even when the edge had fired already
			}
		}
		r.notify(ed.dst)
	}
	if !matched && res.Handle != "" && res.Handle != "output" {
		r.emit(r.plan.nodes[i].id, EvWarning,
			fmt.Sprintf("%s took branch %q, which has no edge: that branch ends here", r.plan.nodes[i].label, res.Handle), nil)
	}
}

// notifyOut notifies every target of node i without firing.
func (r *runner) notifyOut(i int, _ string) {
	for _, ei := range r.plan.out[i] {
		r.notify(r.plan.edges[ei].dst)
	}
}

func (r *runner) notify(n int) {
	if !r.inPending[n] {
		r.inPending[n] = true
		r.pending = append(r.pending, n)
		if r.nodes[n].Status == NodeIdle || r.nodes[n].Status.Settled() {
			r.stateMu.Lock()
			r.nodes[n].Status = NodePending
			r.stateMu.Unlock()
		}
		r.markDirty(n)
	}
}

// evaluate decides every pending node whose inputs have all settled. A
// decision to run only adds to what may still fire, so deciding in order is
// safe; if nothing can make progress while nodes still wait on each other
// (a cycle of joins), the oldest node with an input is forced to run.
func (r *runner) evaluate() {
	if r.ending != "" {
		return
	}
	if r.e.onEvaluate != nil {
		r.e.onEvaluate(r) // tests: where the loop decides
	}
	for progress := true; progress && len(r.pending) > 0; {
		progress = false
		// kept filters batch in place; r.pending collects the nodes that
		// decisions notify. They must not share an array: a node appended
		// to one would overwrite a node kept in the other, leaving it
		// inPending but in no list, undecided for good (issue #13).
		batch := append([]int(nil), r.pending...)
		kept := batch[:0]
		r.pending = r.pending[:0]
		for _, n := range batch {
			if r.ending != "" {
				break
			}
			if !r.inPending[n] {
				continue
			}
			if r.blocked(n) {
				kept = append(kept, n)
				continue
			}
			r.decideNode(n)
			progress = true
		}
		r.pending = append(kept, r.pending...)
		if !progress && len(r.pending) > 0 && r.running == 0 && len(r.queue) == 0 && len(r.waiting) == 0 {
			for k, n := range r.pending {
				if r.firedCount[n] > 0 && !r.busy(n) {
					r.pending = append(r.pending[:k:k], r.pending[k+1:]...)
					r.decideNode(n)
					progress = true
					break
				}
			}
			if !progress { // nothing fired anywhere: everything left is skipped
				for _, n := range append([]int(nil), r.pending...) {
					if !r.busy(n) {
						r.removePending(n)
						r.decideNode(n)
						progress = true
					}
				}
			}
		}
	}
}

func (r *runner) removePending(n int) {
	for k, m := range r.pending {
		if m == n {
			r.pending = append(r.pending[:k], r.pending[k+1:]...)
			return
		}
	}
}

func (r *runner) busy(n int) bool {
	s := r.nodes[n].Status
	return s == NodeQueued || s == NodeRunning || s == NodeWaiting
}

// decideNode runs or skips a pending node and consumes its fired inputs.
func (r *runner) decideNode(n int) {
	r.inPending[n] = false
	in := r.plan.in[n]
	fired := make([]bool, len(in))
	var inputs []string
	for k, ei := range in {
		if r.fired[ei] {
			fired[k] = true
			inputs = append(inputs, r.nodes[r.plan.edges[ei].src].Output)
			r.fired[ei] = false
		}
	}
	r.firedCount[n] = 0
	run, reason := r.plan.nodes[n].join.decide(r, n, fired)
	if run {
		r.enqueue(n, strings.Join(inputs, "\n\n"), r.nodes[n].Rejection)
		return
	}
	if r.nodes[n].Visits > 0 || r.nodes[n].lastStatus() == NodeSkipped {
		// In a cycle, a branch not taken back into a node that already ran
		// (or was skipped: skipping it again would go round the cycle for
		// ever) is no new visit: keep its result, and propagate nothing.
		if r.nodes[n].Status == NodePending {
			r.stateMu.Lock()
			r.nodes[n].Status = r.nodes[n].lastStatus()
			r.stateMu.Unlock()
			r.markDirty(n)
		}
		return
	}
	r.skip(n, reason)
}

// skip marks a node skipped and lets the skip propagate.
func (r *runner) skip(n int, reason string) {
	r.markSkipped(n, reason)
	r.notifyOut(n, "")
}

// markSkipped records node n as skipped, with its step_end event.
func (r *runner) markSkipped(n int, reason string) {
	ns := r.nodes[n]
	now := time.Now().UTC()
	r.stateMu.Lock()
	ns.Status = NodeSkipped
	ns.FinishedAt = &now
	r.stateMu.Unlock()
	r.markDirty(n)
	r.emit(r.plan.nodes[n].id, EvStepEnd, "skipped", map[string]any{"status": NodeSkipped, "reason": reason})
}

// blocked reports whether node n must wait: it is still busy with a
// previous visit, or an input that has not fired can still fire.
func (r *runner) blocked(n int) bool {
	if r.busy(n) {
		return true
	}
	in := r.plan.in[n]
	if r.firedCount[n] == len(in) {
		return false
	}
	for _, ei := range in {
		if !r.fired[ei] && r.canStillFire(r.plan.edges[ei].src, n) {
			return true
		}
	}
	return false
}

// canStillFire reports whether node s may still run (and so fire an edge
// into n) in this run. In an acyclic plan that is "reachable and not yet
// settled". With cycles, s can fire if it is active, or reachable from an
// active node without passing through n.
func (r *runner) canStillFire(s, n int) bool {
	if s == n || !r.plan.reachable[s] {
		// A self-loop fires only after n runs: it cannot hold up the
		// decision to run n (it would deadlock n on itself).
		return false
	}
	if r.plan.acyclic {
		return !r.nodes[s].Status.Settled()
	}
	if r.potent(s) {
		return true
	}
	seen := make([]bool, len(r.plan.nodes))
	seen[n] = true
	var stack []int
	for i := range r.nodes {
		if i != n && r.potent(i) {
			seen[i] = true
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, ei := range r.plan.out[v] {
			d := r.plan.edges[ei].dst
			if d == s {
				return true
			}
			if !seen[d] {
				seen[d] = true
				stack = append(stack, d)
			}
		}
	}
	return false
}

// potent: the node is active or certain to run.
func (r *runner) potent(i int) bool {
	return r.busy(i) || (r.inPending[i] && r.firedCount[i] > 0)
}
