package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

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
func (r *runner) headerDirty() bool { return r.headerChanged }

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
		r.headerChanged = false
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
