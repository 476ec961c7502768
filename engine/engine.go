package engine

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

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
	// workers run node executors (see workers). Run loops keep their own
	// goroutines: kept for them too, their grown stacks added 5 MB to the
	// server's peak RSS under load for no CPU that showed.
	workers *workers
	// firstDelta overrides firstDeltaDelay (tests: a reply that surely
	// arrives before its first llm_delta is due).
	firstDelta time.Duration
	// inFlightDelay overrides inFlightPersistDelay (tests: steps that
	// surely end before their running state would be flushed).
	inFlightDelay time.Duration

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
	// heldAt is when the store last said which runs this process holds
	// (unix ns; see checkHeld).
	heldAt atomic.Int64
	// unreleased are runs whose loop ended but whose lease release failed
	// (a full disk): released before any renewal, so they do not stay
	// leased by a process that no longer drives them.
	unreleasedMu sync.Mutex
	unreleased   map[string]bool
	// claimMu orders a retry of the pending releases with a claim of
	// orphaned runs: a release must not end a claim this process just
	// made of the same run (same owner) before the claim drops it.
	claimMu sync.Mutex

	// onEvaluate, set only by tests (export_test.go), is called on the
	// loop goroutine each time it is about to decide pending nodes.
	onEvaluate func(r *runner)
	// afterLaunch, set only by tests, is called by deliver once the run it
	// loaded is live.
	afterLaunch func()
}

// StartOptions are the per-run inputs.
type StartOptions struct {
	// Input is the run's input; "" means none given.
	Input      string
	WorkflowID string
	WorkDir    string
	// workspace gives the run a fresh folder under WorkspaceRoot as WorkDir.
	workspace bool
	// KeepLog keeps the run's log in memory while it runs here, so that
	// WaitLog answers a run that ends here without reading the log back
	// from the store (AgentFlow's POST /api/run answers with the whole
	// log). A log over a few thousand events or a MiB is not kept.
	KeepLog bool
	// runID, when set, is the new run's id (chosen early for its worktree).
	runID string
	// fork, when set, makes the run a fork (see fork.go).
	fork *forkData
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
		workers: newWorkers(workersIdleMax, workersIdleFor),
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
	e.workers.close()
}
