package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

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
	if d.CallID == "" {
		var w waitRecord
		if json.Unmarshal(r.nodes[i].Wait, &w) == nil && w.Tool != nil {
			d.CallID = w.Tool.CallID // stored with the claim: see Decision.CallID
		}
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
	// The wait record stays until the node settles: a crash while the
	// resumed node runs re-applies the decision with the same state.
	var w waitRecord
	_ = json.Unmarshal(ns.Wait, &w)
	r.markDirty(i)
	if len(r.waiting) == 0 && r.ending == "" {
		r.setStatus(StatusRunning)
	}
	r.syncHeader()
	r.headerChanged = true
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
