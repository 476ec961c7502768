package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

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
// runner drives one run: one goroutine runs its loop, which alone touches
// the scheduling, checkpoint and recovery state; other goroutines reach it
// through the inbox.
type runner struct {
	e    *Engine
	plan *plan

	stateMu sync.RWMutex
	run     *Run
	nodes   []*NodeState

	emitMu  sync.Mutex
	seq     int64
	holding bool     // emit keeps events in held (guarded by emitMu)
	silent  bool     // emit drops events: the log already has them (guarded by emitMu)
	held    []*Event // events of prefix, stored with the run
	// kept is the whole log as emitted, for WaitLog, while keepLog (a run
	// started here with StartOptions.KeepLog, until it outgrows the cap).
	keepLog   bool
	kept      []Event
	keptBytes int

	ctx    context.Context
	cancel context.CancelFunc

	schedState
	checkpointState
	recoveryState
	inboxState

	mcp runMCP // the run's MCP servers while its loop drives it
	// fork is set on a run forked from another: the parent's results of the
	// nodes upstream of the fork point, reused on their first visit.
	fork *forkData
	// leaseGone is set (from any goroutine) once this process learned that
	// it no longer holds the run: nothing more is written or started.
	leaseGone atomic.Bool
	// acquiredAt is when this runner's lease was taken (launch): a list of
	// held runs read before it does not know of it.
	acquiredAt time.Time
}

// schedState is what decides which node runs next (loop-owned).
type schedState struct {
	fired      []bool // per edge: fired for its target's next visit
	firedCount []int  // per node: how many incoming edges fired
	pending    []int  // nodes notified but not yet decided, oldest first
	// spare is evaluate's second array for pending (never pending's own):
	// the two swap each round instead of a new array per round.
	spare      []int
	firedBuf   []bool // decideNode's scratch
	inPending  []bool
	queue      []int // decided to run, waiting for a slot or for resume
	waiting    []int // nodes waiting for a human, oldest first
	running    int
	cancels    []context.CancelFunc // by node index: the running node's, else nil
	done       chan nodeDone        // results of launched nodes
	inlineDone []nodeDone           // results of nodes run inline this iteration
	goAgain    bool                 // something completed this iteration: go round again
	ending     RunStatus            // failed or cancelled once decided; loop drains then ends
	endReason  string
	stopping   bool // engine shutdown: drain, persist nothing more, keep run resumable
	begun      bool // begin ran
}

// checkpointState is what the next checkpoint must write (loop-owned).
type checkpointState struct {
	dirty         []int
	isDirty       []bool
	headerChanged bool // the header changed since the last checkpoint
	impureDone    bool // a non-pure node settled since the last checkpoint
	// flushT, while flushArmed, is armed after a dispatch (commit in-flight
	// state if still running) or after a failed checkpoint (the retry). One
	// timer per run, reset each time: a new one per dispatch was 3 of an
	// agent node's allocations.
	flushT     *time.Timer
	flushArmed bool
	saveFailed bool // the last checkpoint failed; headerChanged is kept
	// savedStatus is the status of this driver's last committed write of
	// the run (its creation or a checkpoint); "" when unknown.
	savedStatus RunStatus
	// pausedSaved: the run's last committed status (as loaded, created or
	// checkpointed) is paused. Snapshot reads it from any goroutine.
	pausedSaved atomic.Bool
	finished    bool // the terminal checkpoint committed, which released the run
	lost        bool // another process took the run over: write nothing more
	// While the store refuses checkpoints: since when, the next retry's
	// delay, and the Sync requests waiting for a checkpoint to commit.
	storeDownSince time.Time
	storeRetry     time.Duration
	syncWaiters    []chan reply
	// saveDL is the deadline context checkpoints share.
	saveDL saveDeadline
}

// recoveryState is what a run continued after a crash still has to redo
// (loop-owned).
type recoveryState struct {
	restartRetry []bool                 // queued again after the previous owner died
	redecide     []int                  // claimed decisions a crash left unapplied
	replay       []logged               // results logged but not checkpointed
	replayFailed []loggedFailure        // failures logged but not checkpointed
	stepLog      map[string]*stepRecord // the log's step events, until redo
	applied      map[string]Decision    // decisions re-applied after a crash, by node
	// An end the previous driver logged but could not save (keepLoggedEnd).
	loggedEnd    RunStatus
	loggedReason string
	loggedSteps  map[string]*stepRecord
	// A completion the previous driver logged that cancelled the run
	// (stepEndData.CancelRun) without the end saved (keepLoggedCancel).
	cancelLogged string
	cancelWarned bool // its "run cancelled" warning is logged too
}

// inboxState carries requests from other goroutines to the loop.
type inboxState struct {
	inboxMu sync.Mutex
	inbox   []request
	gone    bool // loop has exited; post must fail
	wake    chan struct{}
	exited  chan struct{}
}

func newRunner(e *Engine, p *plan, run *Run, states []*NodeState, lastSeq int64, log map[string]*stepRecord) *runner {
	n := len(p.nodes)
	r := &runner{
		e: e, plan: p, run: run, seq: lastSeq,
		nodes: make([]*NodeState, n),
		schedState: schedState{
			fired:      make([]bool, len(p.edges)),
			firedCount: make([]int, n),
			inPending:  make([]bool, n),
			cancels:    make([]context.CancelFunc, n),
			done:       make(chan nodeDone, min(n, 64)), // never more in flight than nodes; a full channel only makes a node wait
		},
		checkpointState: checkpointState{isDirty: make([]bool, n)},
		recoveryState:   recoveryState{restartRetry: make([]bool, n)},
		inboxState:      inboxState{wake: make(chan struct{}, 1), exited: make(chan struct{})},
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	run.Owner = e.cfg.Owner
	states0 := make([]NodeState, n) // one allocation for every node's state
	for i, pn := range p.nodes {
		states0[i].NodeID = pn.id
		r.nodes[i] = &states0[i]
	}
	r.pausedSaved.Store(run.Status == StatusPaused) // as stored: loaded, or not stored yet
	r.restore(states, log)
	return r
}

func sortByKey(s []int, key func(int) int) {
	for i := 1; i < len(s); i++ { // insertion sort: lists are tiny
		for j := i; j > 0 && key(s[j]) < key(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// loop is the run's scheduler: one goroutine, events in, nodes out.
func (r *runner) loop() {
	defer r.cancel()
	defer r.saveDL.release()
	defer r.closeMCP()
	r.begin()
	for {
		// A wake asks for a round, and this is it: its token is taken
		// before the inbox is read, so a request posted later still wakes
		// the next round, while the token of one read here does not make
		// an empty round (which saved the nodes just dispatched as running:
		// the first step after every decision).
		select {
		case <-r.wake:
		default:
		}
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
			// A checkpoint that fails skips the rest: nothing starts until
			// the completions it holds are durable, and the retry (or the
			// stop, see failStore) comes from the wait below.
			if r.impureDone && !settling && !r.save() {
				goto wait
			}
			for r.ending == "" && r.status() == StatusRunning && r.dispatchWhere(isPure) {
				r.evaluate()
			}
			if !settling && !r.save() {
				goto wait
			}
			// Completions applied so far this round (a decision from the
			// inbox, pure nodes, the prefix before the loop) are evaluated
			// and saved above: only those dispatch applies inline call for
			// another round. Left set, the round went round again and saved
			// the nodes just dispatched as running: a commit per run, and per
			// decision, that recovery does not need (the log's step_start
			// says they were in flight).
			r.goAgain = false
			if r.ending == "" && r.status() == StatusRunning {
				r.dispatch()
			}
			if r.running > 0 && len(r.dirty) > 0 && !r.flushArmed {
				r.armFlush(r.e.flushDelay())
			}
			if r.running == 0 && r.settle() && r.tryExit() {
				return
			}
		}
		if r.goAgain {
			r.goAgain = false
			continue
		}
	wait:
		var flushC <-chan time.Time
		if r.flushArmed {
			flushC = r.flushT.C
		}
		select {
		case <-flushC:
			r.flushArmed = false
			// A retry after a failed checkpoint is the loop top's.
			if !r.stopping && r.storeDownSince.IsZero() {
				r.save()
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
			// The loop top handles these completions; goAgain is only for
			// inline completions after dispatch. (Going round again would
			// commit the state of nodes just dispatched: an extra commit per
			// step that recovery does not need, as the event log shows
			// which nodes were in flight.)
			r.goAgain = false
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
	if ended := r.redo(); ended {
		return
	}
	if r.running > 0 {
		return
	}
	if len(r.waiting) > 0 && len(r.queue) == 0 {
		r.syncHeader()
		if r.status() != StatusPaused {
			r.setStatus(StatusPaused)
			r.headerChanged = true
		}
		return
	}
	if len(r.waiting) > 0 {
		r.setStatus(StatusPaused)
	} else {
		r.setStatus(StatusRunning)
	}
	r.headerChanged = true
}
