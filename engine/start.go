package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/switchyard/switchyard/graph"
)

// Starting runs: a workflow compiled into a plan, stored with its first
// steps, and handed to its loop.

// ValidateGraph normalizes g in place and validates it.
func ValidateGraph(g *graph.Graph) []graph.Problem {
	probs := graph.Normalize(g)
	return append(probs, graph.Validate(g)...)
}

// StartGraph validates and starts a drawn graph. A graph with errors never
// starts: the error is an *InvalidError carrying the problems.
func (e *Engine) StartGraph(ctx context.Context, g *graph.Graph, opt StartOptions) (*Run, error) {
	pg, err := e.PrepareGraph(g)
	if err != nil {
		return nil, err
	}
	return e.StartPrepared(ctx, pg, opt)
}

// PreparedGraph is a drawn graph validated, snapshotted and compiled once,
// to be started any number of times: a server that sees the same graph
// again (a client posting it inline with every run, as AgentFlow's does)
// skips that work, which was about a tenth of a short run's CPU. Nothing
// of it changes after PrepareGraph, so concurrent runs share it.
type PreparedGraph struct {
	p         *plan
	def       json.RawMessage
	workspace bool
	hasAgent  bool
}

// Definition is the graph's snapshot as runs store it.
func (pg *PreparedGraph) Definition() json.RawMessage { return pg.def }

// HasAgent reports whether the graph has an agent node (one needs an LLM).
func (pg *PreparedGraph) HasAgent() bool { return pg.hasAgent }

// PrepareGraph normalizes g in place, validates it and compiles it. A
// graph with errors is an *InvalidError carrying the problems.
func (e *Engine) PrepareGraph(g *graph.Graph) (*PreparedGraph, error) {
	probs := ValidateGraph(g)
	if graph.HasErrors(probs) {
		return nil, &InvalidError{Problems: probs}
	}
	def, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("snapshot graph: %w", err)
	}
	pg := &PreparedGraph{
		p: compileGraph(g, e.cfg.MaxVisits),
		// Clipped: runs share these bytes, and an append to one run's
		// definition must copy rather than write into the others'.
		def:       def[:len(def):len(def)],
		workspace: usesBuiltinTools(g),
	}
	for _, n := range g.Nodes {
		if n.Type == graph.TypeAgent {
			pg.hasAgent = true
			break
		}
	}
	return pg, nil
}

// StartPrepared starts a run of a prepared graph.
func (e *Engine) StartPrepared(ctx context.Context, pg *PreparedGraph, opt StartOptions) (*Run, error) {
	if opt.WorkDir == "" && pg.workspace {
		// The agents' file tools and Bash work in a fresh folder of the run
		// (made on first use): WorkspaceRoot/<run id>.
		opt.workspace = true
	}
	return e.start(ctx, pg.p, KindGraph, pg.def, opt, seedFor(KindGraph, opt.Input))
}

// usesBuiltinTools reports whether an agent of g may call a built-in tool.
func usesBuiltinTools(g *graph.Graph) bool {
	for _, n := range g.Nodes {
		if n.Type == graph.TypeAgent && n.Data.Tools != nil && len(n.Data.Tools.Builtin) > 0 {
			return true
		}
	}
	return false
}

// newRunID returns a time-ordered UUID (version 7): runs started together
// land on the same pages of every index keyed by run id (the event log is
// clustered by it), so a group commit writes a few pages instead of one
// random page per run. Ids also sort by creation time.
func newRunID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString() // no clock reading: a random id still works
	}
	return id.String()
}

// start creates a run of plan p, seeds its root nodes and launches it.
func (e *Engine) start(ctx context.Context, p *plan, kind string, def json.RawMessage, opt StartOptions,
	seed func(r *runner, root int)) (*Run, error) {
	now := time.Now().UTC()
	id := opt.runID
	if id == "" {
		id = newRunID()
	}
	run := &Run{
		ID: id, WorkflowID: opt.WorkflowID, Kind: kind, Definition: def,
		Status: StatusPending, Input: opt.Input, WorkDir: opt.WorkDir,
		PendingApprovals: []PendingApproval{}, CreatedAt: now, UpdatedAt: now,
	}
	if opt.workspace {
		run.WorkDir = filepath.Join(e.cfg.WorkspaceRoot, run.ID)
	}
	r := newRunner(e, p, run, nil, 0, nil)
	r.fork = opt.fork
	r.keepLog = opt.KeepLog
	for _, i := range p.roots {
		seed(r, i)
	}
	// The run is stored with its queued roots, so a process that dies
	// before the first checkpoint leaves a run the next one can start, and
	// with the results and events of its first pure steps: one commit.
	nodes, events := r.prefix()
	// Created already held by this process: no AcquireRun round trip.
	hdr := r.header()
	hdr.Owner, hdr.LeaseUntil = e.cfg.Owner, now.Add(e.cfg.LeaseTTL)
	if err := e.store.CreateRun(ctx, hdr, nodes, events); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	r.savedStatus = hdr.Status
	r.pausedSaved.Store(hdr.Status == StatusPaused)
	for _, ev := range events {
		for _, s := range e.cfg.Sinks {
			s.Emit(ev)
		}
	}
	snap := r.header()
	if err := e.launch(r, nil); err != nil {
		return nil, err
	}
	return snap, nil
}

// launch registers r as live and starts its loop. loaded is the loading
// entry of the deliver that loaded r (nil for a new run): it ends in the
// same step, and only if r goes live. A run is never live and loading at
// once: a loop that exits at once (a resumed run that pauses again) then
// finds its run not loading, so it guards its lease release with a
// loading entry of its own (tryExit), and the next resume waits for that
// release. Ended after launch, the loader's entry let the loop skip the
// guard, and the next resume take the lease before the release ended it.
func (e *Engine) launch(r *runner, loaded chan struct{}) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return errors.New("engine is closed")
	}
	if _, dup := e.live[r.run.ID]; dup {
		e.mu.Unlock()
		return fmt.Errorf("run %s: %w: already live", r.run.ID, ErrConflict)
	}
	e.live[r.run.ID] = r
	r.acquiredAt = time.Now()
	if loaded != nil {
		delete(e.loading, r.run.ID)
		close(loaded)
	}
	e.mu.Unlock()
	go r.loop()
	return nil
}
