// Package memory is the in-memory store.Store: the engine's MemStore for
// runs, plus saved workflows, sessions, YAML canvas positions, commit hooks
// and retention, all in memory. For tests and for runs that need no
// durability; it passes the same conformance suite (store/storetest) as
// the SQLite and PostgreSQL stores.
package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/internal/commit"
)

var _ store.Store = (*Store)(nil)

// Store is the in-memory store. It is safe for concurrent use.
type Store struct {
	*engine.MemStore
	now func() time.Time
	log *slog.Logger

	mu        sync.Mutex // guards what follows
	closed    bool
	workflows map[string]*store.Workflow
	versions  map[string][]store.WorkflowVersion // oldest first
	sessions  map[string]time.Time
	positions map[string]map[string]store.NodePosition
	named     map[string]bool // YAML runs NameRuns looked at

	// hookMu orders each write with its hook calls, so hooks see every
	// run's events in seq order, one call at a time.
	hookMu sync.Mutex
	hooks  []commit.Hook

	written, dropped, ops atomic.Uint64
}

// Option configures New.
type Option func(*Store)

// WithClock sets the clock of workflow and session times (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.log = l } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{MemStore: engine.NewMemStore(), now: time.Now, log: slog.Default(),
		workflows: map[string]*store.Workflow{}, versions: map[string][]store.WorkflowVersion{},
		sessions: map[string]time.Time{}, positions: map[string]map[string]store.NodePosition{},
		named: map[string]bool{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Close makes every later write fail with store.ErrClosed. Idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// open returns store.ErrClosed once the store is closed.
func (s *Store) open() error {
	if s.isClosed() {
		return store.ErrClosed
	}
	return nil
}

// Stats counts events and operations; Batches stays 0 (no transactions).
func (s *Store) Stats() store.Stats {
	return store.Stats{EventsWritten: s.written.Load(), EventsDropped: s.dropped.Load(), Ops: s.ops.Load()}
}

// OnCommit implements store.Store: h is called after each write, with what
// it stored.
func (s *Store) OnCommit(h func(events []engine.Event, runs []*engine.Run)) {
	s.hookMu.Lock()
	s.hooks = append(s.hooks, h)
	s.hookMu.Unlock()
}

// callHooks runs with hookMu held.
func (s *Store) callHooks(events []engine.Event, runs []*engine.Run) {
	for _, h := range s.hooks {
		func() {
			defer func() {
				if p := recover(); p != nil {
					s.log.Error("memory store: commit hook panicked", "panic", p)
				}
			}()
			h(events, runs)
		}()
	}
}

// Emit stores a copy of ev; an event of an unknown run, a fenced owner or
// a duplicate seq (or after Close) is counted as dropped.
func (s *Store) Emit(ev *engine.Event) {
	if ev == nil {
		return
	}
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	if s.isClosed() || !s.Append(ev) {
		s.dropped.Add(1)
		return
	}
	s.written.Add(1)
	if len(s.hooks) > 0 {
		c := commit.CopyEvents(ev.RunID, []*engine.Event{ev})
		c[0].Owner = ""
		s.callHooks(c, nil)
	}
}

// CreateRun implements engine.Store. ErrNotFound if r.WorkflowID names no
// stored workflow.
func (s *Store) CreateRun(ctx context.Context, r *engine.Run, nodes []*engine.NodeState, events []*engine.Event) error {
	if err := s.open(); err != nil {
		return err
	}
	if r.WorkflowID != "" && r.Kind != engine.KindYAML { // a YAML run's workflow is a file
		s.mu.Lock()
		_, ok := s.workflows[r.WorkflowID]
		s.mu.Unlock()
		if !ok {
			return fmt.Errorf("memory store: create run %s: workflow %q: %w", r.ID, r.WorkflowID, engine.ErrNotFound)
		}
	}
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	if err := s.MemStore.CreateRun(ctx, r, nodes, events); err != nil {
		return err
	}
	s.ops.Add(1)
	s.written.Add(uint64(len(events)))
	if len(s.hooks) > 0 {
		s.callHooks(commit.CopyEvents(r.ID, events), []*engine.Run{commit.CloneRun(r)})
	}
	return nil
}

// Checkpoint implements engine.Store.
func (s *Store) Checkpoint(ctx context.Context, r *engine.Run, nodes []*engine.NodeState) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	if err := s.MemStore.Checkpoint(ctx, r, nodes); err != nil {
		return err
	}
	s.ops.Add(1)
	if len(s.hooks) > 0 {
		s.callHooks(nil, []*engine.Run{commit.CloneRun(r)})
	}
	return nil
}

// The other writes of engine.Store refuse once the store is closed.

func (s *Store) AcquireRun(ctx context.Context, runID, owner string, expect engine.RunStatus, now, leaseUntil time.Time) error {
	if err := s.open(); err != nil {
		return err
	}
	return s.MemStore.AcquireRun(ctx, runID, owner, expect, now, leaseUntil)
}

func (s *Store) ClaimWaitingNode(ctx context.Context, runID, nodeID, owner string, decision []byte) error {
	if err := s.open(); err != nil {
		return err
	}
	return s.MemStore.ClaimWaitingNode(ctx, runID, nodeID, owner, decision)
}

func (s *Store) RenewLeases(ctx context.Context, owner string, leaseUntil time.Time) error {
	if err := s.open(); err != nil {
		return err
	}
	return s.MemStore.RenewLeases(ctx, owner, leaseUntil)
}

func (s *Store) ExpireLeases(ctx context.Context, owner string) error {
	if err := s.open(); err != nil {
		return err
	}
	return s.MemStore.ExpireLeases(ctx, owner)
}

func (s *Store) ReleaseRun(ctx context.Context, runID, owner string) error {
	if err := s.open(); err != nil {
		return err
	}
	return s.MemStore.ReleaseRun(ctx, runID, owner)
}

func (s *Store) RequestCancel(ctx context.Context, runID string) error {
	if err := s.open(); err != nil {
		return err
	}
	return s.MemStore.RequestCancel(ctx, runID)
}

func (s *Store) TakeCancelRequests(ctx context.Context, owner string) ([]string, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	return s.MemStore.TakeCancelRequests(ctx, owner)
}

// NameRuns implements store.Store.
func (s *Store) NameRuns(ctx context.Context, name func(r *engine.Run) string, limit int) (int, error) {
	if err := s.open(); err != nil {
		return 0, err
	}
	all, err := s.ListRuns(ctx, engine.RunFilter{Limit: math.MaxInt})
	if err != nil {
		return 0, err
	}
	names := map[string]string{}
	s.mu.Lock()
	for i := len(all) - 1; i >= 0 && (limit <= 0 || len(names) < limit); i-- { // oldest first
		if r := all[i]; r.Kind == engine.KindYAML && r.WorkflowID == "" && !s.named[r.ID] {
			names[r.ID] = name(r)
			s.named[r.ID] = true
		}
	}
	s.mu.Unlock()
	s.SetWorkflowIDs(func(r *engine.Run) (string, bool) {
		id, ok := names[r.ID]
		return id, ok && r.WorkflowID == ""
	})
	return len(names), nil
}

// --- workflows ---

func cloneWorkflow(w *store.Workflow) *store.Workflow {
	c := *w
	c.Definition = slices.Clone(w.Definition)
	return &c
}

// CreateWorkflow implements store.Workflows.
func (s *Store) CreateWorkflow(_ context.Context, w store.Workflow) (*store.Workflow, error) {
	if err := store.ValidateWorkflow(&w); err != nil {
		return nil, fmt.Errorf("memory store: create workflow: %w", err)
	}
	if w.ID == "" {
		w.ID = uuid.NewString()
	}
	now := commit.NormTime(s.now())
	w.Version, w.CreatedAt, w.UpdatedAt = 1, now, now
	w.Definition = slices.Clone(w.Definition)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if _, taken := s.workflows[w.ID]; taken {
		return nil, fmt.Errorf("memory store: create workflow %s: id is taken: %w", w.ID, engine.ErrConflict)
	}
	s.workflows[w.ID] = cloneWorkflow(&w)
	s.versions[w.ID] = []store.WorkflowVersion{versionOf(&w, now)}
	return &w, nil
}

func versionOf(w *store.Workflow, at time.Time) store.WorkflowVersion {
	return store.WorkflowVersion{WorkflowID: w.ID, Version: w.Version, Name: w.Name, Description: w.Description,
		Kind: w.Kind, Definition: slices.Clone(w.Definition), CreatedAt: at}
}

// UpdateWorkflow implements store.Workflows.
func (s *Store) UpdateWorkflow(_ context.Context, w store.Workflow, expectVersion int) (*store.Workflow, error) {
	if err := store.ValidateWorkflow(&w); err != nil {
		return nil, fmt.Errorf("memory store: update workflow %s: %w", w.ID, err)
	}
	now := commit.NormTime(s.now())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	cur, ok := s.workflows[w.ID]
	if !ok {
		return nil, fmt.Errorf("memory store: update workflow %s: %w", w.ID, engine.ErrNotFound)
	}
	if cur.Version != expectVersion {
		return nil, fmt.Errorf("memory store: update workflow %s: version %d was expected but the current one is %d: %w",
			w.ID, expectVersion, cur.Version, engine.ErrConflict)
	}
	w.Version, w.CreatedAt, w.UpdatedAt = cur.Version+1, cur.CreatedAt, now
	w.Definition = slices.Clone(w.Definition)
	s.workflows[w.ID] = cloneWorkflow(&w)
	s.versions[w.ID] = append(s.versions[w.ID], versionOf(&w, now))
	return &w, nil
}

// DeleteWorkflow implements store.Workflows: its runs stay, without a
// workflow id.
func (s *Store) DeleteWorkflow(_ context.Context, id string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	_, ok := s.workflows[id]
	delete(s.workflows, id)
	delete(s.versions, id)
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("memory store: delete workflow %s: %w", id, engine.ErrNotFound)
	}
	s.SetWorkflowIDs(func(r *engine.Run) (string, bool) { return "", r.WorkflowID == id })
	return nil
}

// GetWorkflow implements store.Workflows.
func (s *Store) GetWorkflow(_ context.Context, id string) (*store.Workflow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workflows[id]
	if !ok {
		return nil, fmt.Errorf("memory store: get workflow %s: %w", id, engine.ErrNotFound)
	}
	return cloneWorkflow(w), nil
}

// ListWorkflows implements store.Workflows: most recently updated first,
// without definitions.
func (s *Store) ListWorkflows(context.Context) ([]*store.Workflow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*store.Workflow{}
	for _, w := range s.workflows {
		c := *w
		c.Definition = nil
		out = append(out, &c)
	}
	slices.SortFunc(out, func(a, b *store.Workflow) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// ListVersions implements store.Workflows: newest first, without
// definitions.
func (s *Store) ListVersions(_ context.Context, id string) ([]store.WorkflowVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.versions[id]
	if len(vs) == 0 {
		return nil, fmt.Errorf("memory store: list versions of workflow %s: %w", id, engine.ErrNotFound)
	}
	out := make([]store.WorkflowVersion, 0, len(vs))
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		v.Definition = nil
		out = append(out, v)
	}
	return out, nil
}

// GetVersion implements store.Workflows.
func (s *Store) GetVersion(_ context.Context, id string, v int) (*store.WorkflowVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, wv := range s.versions[id] {
		if wv.Version == v {
			wv.Definition = slices.Clone(wv.Definition)
			return &wv, nil
		}
	}
	return nil, fmt.Errorf("memory store: get version %d of workflow %s: %w", v, id, engine.ErrNotFound)
}

// --- sessions and positions ---

// RevokeSession implements store.Sessions; expired revocations go.
func (s *Store) RevokeSession(_ context.Context, id string, exp time.Time) error {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	maps.DeleteFunc(s.sessions, func(_ string, e time.Time) bool { return !e.After(now) })
	if _, ok := s.sessions[id]; !ok {
		s.sessions[id] = commit.NormTime(exp)
	}
	return nil
}

// RevokedSessions implements store.Sessions.
func (s *Store) RevokedSessions(context.Context) (map[string]time.Time, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	out := map[string]time.Time{}
	for id, e := range s.sessions {
		if e.After(now) {
			out[id] = e
		}
	}
	return out, nil
}

// YAMLPositions implements store.Positions.
func (s *Store) YAMLPositions(_ context.Context, workflowID string) (map[string]store.NodePosition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := maps.Clone(s.positions[workflowID])
	if out == nil {
		out = map[string]store.NodePosition{}
	}
	return out, nil
}

// SetYAMLPositions implements store.Positions.
func (s *Store) SetYAMLPositions(_ context.Context, workflowID string, pos map[string]store.NodePosition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	if len(pos) == 0 {
		delete(s.positions, workflowID)
		return nil
	}
	s.positions[workflowID] = maps.Clone(pos)
	return nil
}

// FirstEvents implements store.Store.
func (s *Store) FirstEvents(ctx context.Context, runIDs []string, typ string) (map[string]engine.Event, error) {
	out := map[string]engine.Event{}
	for _, id := range runIDs {
		evs, err := s.Events(ctx, id, 0, 1)
		if err != nil && !errors.Is(err, engine.ErrNotFound) {
			return nil, err
		}
		if len(evs) == 1 && evs[0].Seq == 1 && evs[0].Type == typ {
			out[id] = evs[0]
		}
	}
	return out, nil
}
