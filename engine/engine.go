package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/mcp"
	"github.com/switchyard/switchyard/yamlflow"
)

// Config configures an Engine. Zero values pick the defaults.
type Config struct {
	// Store persists runs; nil keeps them in memory only.
	Store Store
	// LLM answers agent and prompt nodes; nil means no LLM configured.
	LLM *llm.Client
	// Claude runs nodes with provider claude (Anthropic's
	// OpenAI-compatible endpoint); nil: such nodes fail with ErrNoClaude.
	Claude *llm.Client
	// Prices, if set, prices model calls: usage in llm_response events and
	// run headers then carries costUsd.
	Prices llm.Prices
	// MaxParallel caps the nodes of one run executing at once (default 16).
	MaxParallel int
	// MaxLLMCalls caps concurrent LLM calls across all runs (default 64).
	MaxLLMCalls int
	// MaxVisits caps how often one node may run in one run (default 25).
	MaxVisits int
	// ArtifactsRoot holds each run's $ARTIFACTS_DIR (default: temp dir).
	ArtifactsRoot string
	// WorkspaceRoot holds the workspace of each drawn run that has no
	// working directory of its own (default: temp dir): the folder its
	// agents' file tools and Bash work in.
	WorkspaceRoot string
	// MCP lists the MCP servers drawn agents may pick by name (serve
	// --mcp-config).
	MCP mcp.Config
	// WorktreeRoot holds the git worktrees of YAML runs that ask for
	// isolation (default: temp dir).
	WorktreeRoot string
	// Owner names this process in run leases (default: random).
	Owner string
	// LeaseTTL is how long a run lease lasts without renewal (default 30s).
	LeaseTTL time.Duration
	// Owners, if set, tells at once which lease owners of this machine
	// died (internal/ownerlock): their runs are taken over without waiting
	// for their leases to run out. Owner must be the one it registered.
	Owners OwnerRegistry
	// Sinks observe every event synchronously, in seq order per run, right
	// after the store got it. They must not block.
	Sinks []Sink
	// Executors adds or replaces node executors by type key.
	Executors map[string]Executor
	Logger    *slog.Logger
}

// OwnerRegistry knows which lease owners died without waiting for their
// leases: on one machine, a process's death is visible at once.
type OwnerRegistry interface {
	// Dead lists owners known to be dead.
	Dead() []string
	// Forget drops a dead owner once its leases were ended.
	Forget(owner string) error
}

// ownerPoll is how often KeepRecovering looks for owners that died, when
// an OwnerRegistry is configured.
const ownerPoll = time.Second

// Engine runs workflows. It is safe for concurrent use.
type Engine struct {
	cfg    Config
	store  Store
	log    *slog.Logger
	llmSem chan struct{}
	execs  map[string]Executor

	mu      sync.Mutex
	live    map[string]*runner
	loading map[string]chan struct{} // runs being loaded from the store
	closed  bool
	wg      sync.WaitGroup
	stop    chan struct{}
	// cancelWake makes the lease loop look for cancel requests now (a
	// store that hears of them pokes it; polling stays the fallback).
	cancelWake chan struct{}

	// lastRenew is when this process last renewed its leases (unix ns):
	// past one lease period, other processes may own its runs.
	lastRenew atomic.Int64
	// unreleased are runs whose loop ended but whose lease release failed
	// (a full disk): released before any renewal, so they do not stay
	// leased by a process that no longer drives them.
	unreleasedMu sync.Mutex
	unreleased   map[string]bool

	// onEvaluate, set only by tests (export_test.go), is called on the
	// loop goroutine each time it is about to decide pending nodes.
	onEvaluate func(r *runner)
}

// StartOptions are the per-run inputs.
type StartOptions struct {
	// Input is the run's input; "" means none given.
	Input      string
	WorkflowID string
	WorkDir    string
	// workspace gives the run a fresh folder under WorkspaceRoot as WorkDir.
	workspace bool
	// runID, when set, is the new run's id (chosen early for its worktree).
	runID string
}

// New builds an engine.
func New(cfg Config) (*Engine, error) {
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = 16
	}
	if cfg.MaxLLMCalls <= 0 {
		cfg.MaxLLMCalls = 64
	}
	if cfg.MaxVisits <= 0 {
		cfg.MaxVisits = 25
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.Owner == "" {
		host, _ := os.Hostname()
		cfg.Owner = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	if cfg.ArtifactsRoot == "" {
		cfg.ArtifactsRoot = filepath.Join(os.TempDir(), "switchyard-artifacts")
	}
	if cfg.WorkspaceRoot == "" {
		cfg.WorkspaceRoot = filepath.Join(os.TempDir(), "switchyard-workspaces")
	}
	if cfg.WorktreeRoot == "" {
		cfg.WorktreeRoot = filepath.Join(os.TempDir(), "switchyard-worktrees")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	st := cfg.Store
	if st == nil {
		st = NewMemStore()
	}
	e := &Engine{
		cfg:     cfg,
		store:   st,
		log:     cfg.Logger,
		llmSem:  make(chan struct{}, cfg.MaxLLMCalls),
		execs:   defaultExecutors(),
		live:    make(map[string]*runner),
		loading: make(map[string]chan struct{}),
		stop:    make(chan struct{}),
	}
	for k, x := range cfg.Executors {
		e.execs[k] = x
	}
	e.lastRenew.Store(time.Now().UnixNano())
	e.unreleased = map[string]bool{}
	e.cancelWake = make(chan struct{}, 1)
	if cn, ok := st.(CancelNotifier); ok {
		cn.OnCancelRequest(func() {
			select {
			case e.cancelWake <- struct{}{}:
			default: // a look is already due
			}
		})
	}
	e.wg.Add(1)
	go e.renewLeases()
	return e, nil
}

// CancelNotifier is implemented by a store that hears at once when any
// process requests a cancel (PostgreSQL's NOTIFY), so the driving process
// need not wait for its next poll.
type CancelNotifier interface {
	OnCancelRequest(func())
}

// Store returns the engine's store.
func (e *Engine) Store() Store { return e.store }

// Claude returns the client of provider claude, or ErrNoClaude.
func (e *Engine) Claude() (*llm.Client, error) {
	if e.cfg.Claude == nil {
		return nil, ErrNoClaude
	}
	return e.cfg.Claude, nil
}

// HasProvider reports whether nodes of provider p (see yamlflow.ProviderFor)
// can run here.
func (e *Engine) HasProvider(p string) bool {
	switch p {
	case "", yamlflow.ProviderOpenAI:
		return e.cfg.LLM != nil
	case yamlflow.ProviderClaude:
		return e.cfg.Claude != nil
	}
	return false
}

// LLM returns the configured LLM, or ErrNoLLM.
func (e *Engine) LLM() (*llm.Client, error) {
	if e.cfg.LLM == nil {
		return nil, ErrNoLLM
	}
	return e.cfg.LLM, nil
}

// Owner is this engine's lease owner name.
func (e *Engine) Owner() string { return e.cfg.Owner }

// renewLeases keeps this process's run leases alive and acts on cancel
// requests left for its runs.
func (e *Engine) renewLeases() {
	defer e.wg.Done()
	t := time.NewTicker(e.cfg.LeaseTTL / 3)
	defer t.Stop()
	cp := time.NewTicker(cancelPoll)
	defer cp.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-cp.C:
			e.takeCancelRequests()
		case <-e.cancelWake:
			e.takeCancelRequests()
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.LeaseTTL/3)
			e.releasePending(ctx)
			now := time.Now()
			if err := e.store.RenewLeases(ctx, e.cfg.Owner, now.Add(e.cfg.LeaseTTL)); err != nil {
				e.log.Error("renew run leases", "err", err)
			} else {
				e.lastRenew.Store(now.UnixNano())
			}
			cancel()
		}
	}
}

// leaseStale reports whether this process's leases may have expired.
func (e *Engine) leaseStale() bool {
	return time.Since(time.Unix(0, e.lastRenew.Load())) > e.cfg.LeaseTTL
}

func (e *Engine) addUnreleased(runID string) {
	e.unreleasedMu.Lock()
	e.unreleased[runID] = true
	e.unreleasedMu.Unlock()
}

// releasePending retries failed lease releases.
func (e *Engine) releasePending(ctx context.Context) {
	e.unreleasedMu.Lock()
	ids := make([]string, 0, len(e.unreleased))
	for id := range e.unreleased {
		ids = append(ids, id)
	}
	e.unreleasedMu.Unlock()
	for _, id := range ids {
		e.mu.Lock()
		_, live := e.live[id]
		_, loading := e.loading[id]
		e.mu.Unlock()
		if live || loading {
			// Driven here again (recovered by this process): the lease
			// is the new driver's, not the one left behind.
			e.unreleasedMu.Lock()
			delete(e.unreleased, id)
			e.unreleasedMu.Unlock()
			continue
		}
		err := e.store.ReleaseRun(ctx, id, e.cfg.Owner)
		if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
			e.unreleasedMu.Lock()
			delete(e.unreleased, id)
			e.unreleasedMu.Unlock()
		}
	}
}

// Close stops every live run without ending it: runs stay "running" with
// no owner, so the next process recovers them; paused runs stay paused.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	runners := make([]*runner, 0, len(e.live))
	for _, r := range e.live {
		runners = append(runners, r)
	}
	e.mu.Unlock()
	for _, r := range runners {
		r.shutdown()
	}
	for _, r := range runners {
		<-r.exited
	}
	close(e.stop)
	e.wg.Wait()
}

// ValidateGraph normalizes g in place and validates it.
func ValidateGraph(g *graph.Graph) []graph.Problem {
	probs := graph.Normalize(g)
	return append(probs, graph.Validate(g)...)
}

// StartGraph validates and starts a drawn graph. A graph with errors never
// starts: the error is an *InvalidError carrying the problems.
func (e *Engine) StartGraph(ctx context.Context, g *graph.Graph, opt StartOptions) (*Run, error) {
	probs := ValidateGraph(g)
	if graph.HasErrors(probs) {
		return nil, &InvalidError{Problems: probs}
	}
	def, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("snapshot graph: %w", err)
	}
	p := compileGraph(g, e.cfg.MaxVisits)
	if opt.WorkDir == "" && usesBuiltinTools(g) {
		// The agents' file tools and Bash work in a fresh folder of the run
		// (made on first use): WorkspaceRoot/<run id>.
		opt.workspace = true
	}
	return e.start(ctx, p, KindGraph, def, opt, func(r *runner, i int) { r.enqueue(i, opt.Input, "") })
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
	// $ARTIFACTS_DIR exists before the first node runs (YAML promises it;
	// drawn graphs create it on first use otherwise).
	if kind == KindYAML {
		if err := os.MkdirAll(filepath.Join(e.cfg.ArtifactsRoot, run.ID), 0o755); err != nil {
			return nil, fmt.Errorf("create artifacts dir: %w", err)
		}
	}
	r := newRunner(e, p, run, nil, 0, nil)
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
	for _, ev := range events {
		for _, s := range e.cfg.Sinks {
			s.Emit(ev)
		}
	}
	snap := r.header()
	if err := e.launch(r); err != nil {
		return nil, err
	}
	return snap, nil
}

// launch registers r as live and starts its loop.
func (e *Engine) launch(r *runner) error {
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
	e.mu.Unlock()
	go r.loop()
	return nil
}

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

// Snapshot returns a run's header and node states: live ones from memory,
// others from the store.
func (e *Engine) Snapshot(ctx context.Context, runID string) (*Run, []*NodeState, error) {
	e.mu.Lock()
	r := e.live[runID]
	e.mu.Unlock()
	if r != nil {
		return r.snapshot()
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
		r, err := e.load(ctx, runID, req.kind)
		if err == nil {
			r.post(req)
			err = e.launch(r)
			if err != nil {
				_ = e.store.ReleaseRun(context.WithoutCancel(ctx), runID, e.cfg.Owner)
			}
		}
		e.mu.Lock()
		delete(e.loading, runID)
		close(done)
		e.mu.Unlock()
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

// load rebuilds a runner from the store and takes the run's lease.
func (e *Engine) load(ctx context.Context, runID string, kind reqKind) (*runner, error) {
	run, err := e.store.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if run.Status.Terminal() {
		return nil, fmt.Errorf("run %s is %s: %w", runID, run.Status, ErrTerminal)
	}
	switch kind {
	case reqDecision:
		if run.Status != StatusPaused {
			return nil, fmt.Errorf("run %s is %s: %w", runID, run.Status, ErrNotPaused)
		}
	case reqContinue:
		if run.Status == StatusPaused {
			return nil, fmt.Errorf("run %s is paused: answer its approval instead: %w", runID, ErrNotWaiting)
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
			return nil, fmt.Errorf("run %s: %w: %w", runID, ErrDrivenElsewhere, err)
		}
		return nil, fmt.Errorf("run %s: take its lease: %w", runID, err)
	}
	// Driven here again: a release left pending by an earlier driver of
	// this process must not clear the new lease.
	e.unreleasedMu.Lock()
	delete(e.unreleased, runID)
	e.unreleasedMu.Unlock()
	run, nodes, lastSeq, err := e.store.LoadRun(ctx, runID)
	if err != nil {
		_ = e.store.ReleaseRun(context.WithoutCancel(ctx), runID, e.cfg.Owner)
		return nil, err
	}
	p, err := e.planFor(run)
	if err != nil {
		_ = e.store.ReleaseRun(context.WithoutCancel(ctx), runID, e.cfg.Owner)
		return nil, err
	}
	onLoad(p, run, nodes) // e.g. YAML always_run nodes run again on resume
	// The event log may be ahead of the node states (a completion reported
	// just before a crash): it is read so nothing reported is redone.
	evs, err := e.store.Events(ctx, runID, 0, 0)
	if err != nil {
		_ = e.store.ReleaseRun(context.WithoutCancel(ctx), runID, e.cfg.Owner)
		return nil, err
	}
	e.killLeftovers(runID, evs)
	log := readLog(evs)
	r := newRunner(e, p, run, nodes, lastSeq, log)
	r.keepLoggedEnd(evs, log)
	return r, nil
}

// compileGraphRun rebuilds a drawn graph's plan from its snapshot.
func compileGraphRun(e *Engine, run *Run) (*plan, error) {
	var g graph.Graph
	if err := json.Unmarshal(run.Definition, &g); err != nil {
		return nil, fmt.Errorf("run %s: decode graph snapshot: %w", run.ID, err)
	}
	return compileGraph(&g, e.cfg.MaxVisits), nil
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
		// instead of racing for the same runs.
		now := time.Now()
		ids, err = oc.ClaimOrphaned(ctx, e.cfg.Owner, now, now.Add(e.cfg.LeaseTTL), 0)
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
					// renewals would keep it from everyone.
					if err := e.store.ReleaseRun(ctx, id, e.cfg.Owner); err != nil {
						e.log.Warn("release a claimed run", "run", id, "err", err)
					}
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
