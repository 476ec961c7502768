package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

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
		data := stepStartData{Type: pn.typ, Visit: ns.Visits}
		if r.restartRetry[i] {
			data.Retry = "restart"
			r.restartRetry[i] = false
		}
		pinned, reuse := r.pinnedResult(i)
		data.Reused = reuse
		// Encoded here, not boxed into emit's any (see emitRaw).
		r.emitRaw(pn.id, EvStepStart, pn.describe, data.appendJSON(make([]byte, 0, 96)))
		r.running++
		if reuse { // a fork reuses the parent run's result: nothing runs
			r.inlineDone = append(r.inlineDone, nodeDone{idx: i, res: pinned})
			continue
		}
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
	buf := r.inlineDone
	for len(r.inlineDone) > 0 {
		d := r.inlineDone[0]
		r.inlineDone = r.inlineDone[1:]
		r.complete(d)
	}
	// Drained: the next batch reuses the array (results were copied out;
	// cleared so it holds no old outputs).
	clear(buf[:cap(buf)])
	r.inlineDone = buf[:0]
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
	r.e.workers.Go(func() {
		start := time.Now()
		res, err := safeCall(ctx, fn)
		r.done <- nodeDone{idx: i, res: res, err: err, elapsed: time.Since(start)}
	})
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
	r.goAgain = true
	if x, ok := r.e.execs[r.plan.nodes[d.idx].typ]; !ok || !isPure(x) {
		r.impureDone = true
	}
	r.running--
	if c := r.cancels[d.idx]; c != nil {
		c()
		r.cancels[d.idx] = nil
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
		ns.Wait = nil
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
		ns.Wait = nil
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
		rec, _ := json.Marshal(waitRecord{Prompt: prompt, Since: now, State: res.Wait.State, Tool: res.Wait.Tool})
		r.stateMu.Lock()
		ns.Status = NodeWaiting
		ns.Wait = rec
		r.stateMu.Unlock()
		r.waiting = append(r.waiting, i)
		r.markDirty(i)
		wd := map[string]any{"input": ns.Input}
		if res.Wait.Tool != nil {
			wd["tool"] = res.Wait.Tool
		}
		r.emit(pn.id, EvWaitInput, prompt, wd)
		if r.status() != StatusPaused {
			r.setStatus(StatusPaused)
		}
		r.syncHeader()
		r.headerChanged = true
		return
	}
	r.stateMu.Lock()
	ns.Status = NodeCompleted
	ns.Output = res.Output
	ns.Handle = res.Handle
	ns.FinishedAt = &now
	ns.Wait = nil
	r.stateMu.Unlock()
	r.markDirty(i)
	data := stepEndData{Status: NodeCompleted, Output: res.Output, Visit: ns.Visits,
		DurationMs: d.elapsed.Milliseconds(), Handle: res.Handle}
	if res.Decided {
		rejection := res.Rejection // a copy: &res.Rejection would move res to the heap on every step
		data.Decided = true
		data.Rejection = &rejection
	}
	data.CancelRun = res.CancelRun
	r.emitRaw(pn.id, EvStepEnd, "completed", data.appendJSON(make([]byte, 0, 96+len(res.Output))))
	if res.CancelRun != "" {
		r.emit(SystemNodeID, EvWarning, cancelWarning(res.CancelRun), nil)
		r.end(StatusCancelled, res.CancelRun)
		return
	}
	r.fire(i, res)
}
