package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"
)

// MemStore is a Store that keeps everything in memory: for tests,
// benchmarks and runs that need no durability.
type MemStore struct {
	mu     sync.RWMutex
	runs   map[string]*memRun
	events map[string][]Event
}

type memRun struct {
	run        Run
	nodes      map[string]*NodeState
	owner      string
	leaseUntil time.Time
	cancelReq  bool
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{runs: map[string]*memRun{}, events: map[string][]Event{}}
}

func copyRun(r *Run) Run {
	c := *r
	c.PendingApprovals = append([]PendingApproval{}, r.PendingApprovals...)
	// Definition is immutable once a run exists: share it, never copy it
	// (copying it on every checkpoint made long chains quadratic).
	if r.FinishedAt != nil {
		t := *r.FinishedAt
		c.FinishedAt = &t
	}
	if r.Usage.CostUSD != nil {
		f := *r.Usage.CostUSD
		c.Usage.CostUSD = &f
	}
	return c
}

func copyNode(n *NodeState) *NodeState {
	c := *n
	c.Fired = append([]string(nil), n.Fired...)
	c.Wait = append(json.RawMessage(nil), n.Wait...)
	if len(c.Wait) == 0 {
		c.Wait = nil
	}
	c.Decision = append(json.RawMessage(nil), n.Decision...)
	if len(c.Decision) == 0 {
		c.Decision = nil
	}
	if len(c.Fired) == 0 {
		c.Fired = nil
	}
	return &c
}

// Emit stores an event.
func (m *MemStore) Emit(ev *Event) { m.Append(ev) }

// Append stores an event and reports whether it did: not for an unknown
// run, an owner that lost the run, or a duplicate seq.
func (m *MemStore) Append(ev *Event) bool {
	c := *ev
	c.Data = append(json.RawMessage(nil), ev.Data...) // the caller may reuse its buffer
	if len(c.Data) == 0 {
		c.Data = nil
	}
	c.Owner = ""
	m.mu.Lock()
	defer m.mu.Unlock()
	mr, ok := m.runs[ev.RunID]
	if !ok || (ev.Owner != "" && mr.owner != ev.Owner) {
		return false // unknown run, or fenced: the emitter lost the run
	}
	evs := m.events[ev.RunID]
	if len(evs) > 0 && evs[len(evs)-1].Seq >= c.Seq {
		return false // duplicate seq
	}
	m.events[ev.RunID] = append(evs, c)
	return true
}

// DeleteRun forgets a run and its events (retention), returning how many
// events went; ok is false for an unknown run.
func (m *MemStore) DeleteRun(id string) (events int, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[id]; !ok {
		return 0, false
	}
	events = len(m.events[id])
	delete(m.runs, id)
	delete(m.events, id)
	return events, true
}

// SetWorkflowIDs sets the workflow id of every run for which fn returns
// set (a deleted workflow's runs lose theirs; YAML runs get theirs named).
func (m *MemStore) SetWorkflowIDs(fn func(r *Run) (id string, set bool)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mr := range m.runs {
		if id, ok := fn(&mr.run); ok {
			mr.run.WorkflowID = id
		}
	}
}

// CreateRun implements Store.
func (m *MemStore) CreateRun(_ context.Context, r *Run, nodes []*NodeState, events []*Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.runs[r.ID]; dup {
		return fmt.Errorf("run %s: %w: exists", r.ID, ErrConflict)
	}
	mr := &memRun{run: copyRun(r), nodes: map[string]*NodeState{}}
	mr.run.Owner, mr.run.LeaseUntil = "", time.Time{}
	if r.Owner != "" {
		mr.owner, mr.leaseUntil = r.Owner, r.LeaseUntil
	}
	for _, n := range nodes {
		mr.nodes[n.NodeID] = copyNode(n)
	}
	m.runs[r.ID] = mr
	for _, ev := range events {
		c := *ev
		c.Data = append(json.RawMessage(nil), ev.Data...)
		if len(c.Data) == 0 {
			c.Data = nil
		}
		c.Owner, c.RunID = "", r.ID
		m.events[r.ID] = append(m.events[r.ID], c)
	}
	return nil
}

// Checkpoint implements Store.
func (m *MemStore) Checkpoint(_ context.Context, r *Run, nodes []*NodeState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mr, ok := m.runs[r.ID]
	if !ok {
		return fmt.Errorf("run %s: %w", r.ID, ErrNotFound)
	}
	if mr.run.Status.Terminal() {
		// A run's end is written once and never changes.
		return fmt.Errorf("run %s is %s: %w", r.ID, mr.run.Status, ErrTerminal)
	}
	if r.Owner != "" && mr.owner != r.Owner {
		return fmt.Errorf("run %s is held by %q: %w", r.ID, mr.owner, ErrConflict)
	}
	mr.run = copyRun(r)
	mr.run.Owner, mr.run.LeaseUntil = "", time.Time{}
	if r.Status.Terminal() {
		mr.owner, mr.leaseUntil = "", time.Time{}
	}
	for _, n := range nodes {
		mr.nodes[n.NodeID] = copyNode(n)
	}
	return nil
}

// GetRun implements Store.
func (m *MemStore) GetRun(_ context.Context, id string) (*Run, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mr, ok := m.runs[id]
	if !ok {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	c := copyRun(&mr.run)
	return &c, nil
}

// LoadRun implements Store.
func (m *MemStore) LoadRun(_ context.Context, id string) (*Run, []*NodeState, int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mr, ok := m.runs[id]
	if !ok {
		return nil, nil, 0, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	c := copyRun(&mr.run)
	nodes := make([]*NodeState, 0, len(mr.nodes))
	for _, n := range mr.nodes {
		nodes = append(nodes, copyNode(n))
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].NodeID < nodes[j].NodeID })
	var last int64
	if evs := m.events[id]; len(evs) > 0 {
		last = evs[len(evs)-1].Seq
	}
	return &c, nodes, last, nil
}

// ListRuns implements Store.
func (m *MemStore) ListRuns(_ context.Context, f RunFilter) ([]*Run, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*Run
	for _, mr := range m.runs {
		r := mr.run
		if f.WorkflowID != "" && r.WorkflowID != f.WorkflowID {
			continue
		}
		if f.Status != "" && r.Status != f.Status {
			continue
		}
		if !f.Before.IsZero() && !r.CreatedAt.Before(f.Before) {
			continue
		}
		c := copyRun(&r)
		out = append(out, &c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Events implements Store.
func (m *MemStore) Events(_ context.Context, id string, after int64, limit int) ([]Event, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if _, ok := m.runs[id]; !ok {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	evs := m.events[id]
	i := sort.Search(len(evs), func(i int) bool { return evs[i].Seq > after })
	out := append([]Event(nil), evs[i:]...)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// AcquireRun implements Store.
func (m *MemStore) AcquireRun(_ context.Context, id, owner string, expect RunStatus, now, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mr, ok := m.runs[id]
	if !ok {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if expect != "" && mr.run.Status != expect {
		return fmt.Errorf("run %s is %s, not %s: %w", id, mr.run.Status, expect, ErrConflict)
	}
	if mr.owner != "" && mr.owner != owner && !mr.leaseUntil.Before(now) {
		return fmt.Errorf("run %s is owned by %s: %w", id, mr.owner, ErrConflict)
	}
	mr.owner, mr.leaseUntil = owner, until
	return nil
}

// ClaimWaitingNode implements Store.
func (m *MemStore) ClaimWaitingNode(_ context.Context, runID, nodeID, owner string, decision []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mr, ok := m.runs[runID]
	if !ok {
		return fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	if mr.owner != owner {
		return fmt.Errorf("run %s is not owned by %s: %w", runID, owner, ErrConflict)
	}
	n, ok := mr.nodes[nodeID]
	if !ok {
		return fmt.Errorf("node %s of run %s: %w", nodeID, runID, ErrNotFound)
	}
	if n.Status != NodeWaiting {
		return fmt.Errorf("node %s is not waiting: %w", nodeID, ErrConflict)
	}
	n.Status = NodeRunning
	n.Decision = append(json.RawMessage(nil), decision...)
	return nil
}

// RenewLeases implements Store.
func (m *MemStore) RenewLeases(_ context.Context, owner string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mr := range m.runs {
		if mr.owner == owner {
			mr.leaseUntil = until
		}
	}
	return nil
}

// HeldRuns implements Store.
func (m *MemStore) HeldRuns(_ context.Context, owner string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	var ids []string
	for id, mr := range m.runs {
		if owner != "" && mr.owner == owner && mr.leaseUntil.After(now) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// ExpireLeases implements Store.
func (m *MemStore) ExpireLeases(_ context.Context, owner string) error {
	if owner == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mr := range m.runs {
		if mr.owner == owner {
			mr.leaseUntil = time.Time{}
		}
	}
	return nil
}

// ReleaseRun implements Store.
func (m *MemStore) ReleaseRun(_ context.Context, id, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mr, ok := m.runs[id]
	if !ok {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if mr.owner != "" && mr.owner != owner {
		return fmt.Errorf("run %s is owned by %s: %w", id, mr.owner, ErrConflict)
	}
	mr.owner = ""
	mr.leaseUntil = time.Time{}
	return nil
}

// RequestCancel implements Store.
func (m *MemStore) RequestCancel(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mr, ok := m.runs[id]
	if !ok {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	mr.cancelReq = true
	return nil
}

// TakeCancelRequests implements Store.
func (m *MemStore) TakeCancelRequests(_ context.Context, owner string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, mr := range m.runs {
		if owner != "" && mr.owner == owner && mr.cancelReq {
			mr.cancelReq = false
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// ListOrphaned implements Store.
func (m *MemStore) ListOrphaned(_ context.Context, now time.Time) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var ids []string
	for id, mr := range m.runs {
		if mr.owner != "" && !mr.leaseUntil.Before(now) {
			continue
		}
		switch mr.run.Status {
		case StatusPending, StatusRunning:
			ids = append(ids, id)
		case StatusPaused:
			for _, n := range mr.nodes {
				if n.Status == NodeRunning {
					ids = append(ids, id)
					break
				}
			}
		}
	}
	sort.Strings(ids)
	return ids, nil
}
