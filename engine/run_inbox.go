package engine

import (
	"context"
	"errors"
	"fmt"
)

type reqKind int

const (
	reqDecision reqKind = iota
	reqContinue
	reqCancel
	reqShutdown
	reqRecover // take over an orphaned run, whatever its status
	reqSync    // make every event emitted so far durable (Exec.Sync)
	reqLost    // this process no longer holds the run (see Engine.markLost)
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
	if req.kind == reqLost {
		if !r.finished {
			r.loseLease(ErrLeaseLost)
		}
		if req.reply != nil {
			req.reply <- reply{}
		}
		return
	}
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
			r.headerChanged = true
		}
		req.reply <- reply{run: r.header()}
	case reqDecision:
		run, err := r.decide(req.nodeID, req.decision)
		req.reply <- reply{run: run, err: err}
	case reqSync:
		r.sync(req.reply)
	}
}

// sync commits a checkpoint now, even with nothing dirty: the store writes
// it strictly after every event already emitted, so when it returns those
// events are durable (and the lease was still ours). While the store
// refuses writes, the answer waits for the checkpoint that succeeds (or
// for this process to stop driving the run).
func (r *runner) sync(rep chan reply) {
	if r.lost {
		rep <- reply{err: ErrLeaseLost}
		return
	}
	r.headerChanged = true
	err := r.persist()
	if err == nil {
		rep <- reply{}
		return
	}
	r.failStore(err)
	if r.lost {
		rep <- reply{err: err}
		return
	}
	r.syncWaiters = append(r.syncWaiters, rep)
}

// Sync returns once every event the node emitted so far is durable: an
// agent loop calls it after a turn's tool results, so a crash never runs a
// finished tool call again. It fails when the run's state cannot be
// written, the lease was lost or the engine is stopping; the node then
// stops where it is.
func (x *Exec) Sync(ctx context.Context) error {
	rep := make(chan reply, 1)
	if !x.r.post(request{kind: reqSync, reply: rep}) {
		return errors.New("run loop has exited")
	}
	select {
	case rp := <-rep:
		return rp.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
