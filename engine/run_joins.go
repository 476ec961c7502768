package engine

import (
	"fmt"
	"strings"
	"time"
)

func (r *runner) firedIDs(i int) []string {
	if r.firedCount[i] == 0 {
		return nil
	}
	ids := make([]string, 0, r.firedCount[i])
	for _, ei := range r.plan.in[i] {
		if r.fired[ei] {
			ids = append(ids, r.plan.edges[ei].id)
		}
	}
	return ids
}

// fire activates the outgoing edges matching the node's handle and
// notifies the targets of the others.
func (r *runner) fire(i int, res Result) {
	handle := res.Handle
	if handle == "" {
		handle = r.plan.defaultHandle
	}
	matched := false
	for _, ei := range r.plan.out[i] {
		ed := r.plan.edges[ei]
		if ed.handle == "" || ed.handle == handle {
			matched = true
			if !r.fired[ei] {
				r.fired[ei] = true
				r.firedCount[ed.dst]++
				r.markDirty(ed.dst) // its persisted inputs changed
			}
			// The rejection note travels with the activation: a decision
			// node sets it, every other node passes on its own.
			rej := r.nodes[i].Rejection
			if res.Decided {
				rej = res.Rejection
			}
			if r.nodes[ed.dst].Rejection != rej {
				r.stateMu.Lock()
				r.nodes[ed.dst].Rejection = rej
				r.stateMu.Unlock()
				r.markDirty(ed.dst) // persisted even when the edge had fired already
			}
		}
		r.notify(ed.dst)
	}
	if !matched && res.Handle != "" && res.Handle != "output" {
		r.emit(r.plan.nodes[i].id, EvWarning,
			fmt.Sprintf("%s took branch %q, which has no edge: that branch ends here", r.plan.nodes[i].label, res.Handle), nil)
	}
}

// notifyOut notifies every target of node i without firing.
func (r *runner) notifyOut(i int, _ string) {
	for _, ei := range r.plan.out[i] {
		r.notify(r.plan.edges[ei].dst)
	}
}

func (r *runner) notify(n int) {
	if !r.inPending[n] {
		r.inPending[n] = true
		r.pending = append(r.pending, n)
		if r.nodes[n].Status == NodeIdle || r.nodes[n].Status.Settled() {
			r.stateMu.Lock()
			r.nodes[n].Status = NodePending
			r.stateMu.Unlock()
		}
		r.markDirty(n)
	}
}

// evaluate decides every pending node whose inputs have all settled. A
// decision to run only adds to what may still fire, so deciding in order is
// safe; if nothing can make progress while nodes still wait on each other
// (a cycle of joins), the oldest node with an input is forced to run.
func (r *runner) evaluate() {
	if r.ending != "" {
		return
	}
	if r.e.onEvaluate != nil {
		r.e.onEvaluate(r) // tests: where the loop decides
	}
	for progress := true; progress && len(r.pending) > 0; {
		progress = false
		// kept filters batch in place; r.pending collects the nodes that
		// decisions notify. They must not share an array: a node appended
		// to one would overwrite a node kept in the other, leaving it
		// inPending but in no list, undecided for good (issue #13).
		batch := append(r.spare[:0], r.pending...)
		kept := batch[:0]
		r.pending = r.pending[:0]
		for _, n := range batch {
			if r.ending != "" {
				break
			}
			if !r.inPending[n] {
				continue
			}
			if r.blocked(n) {
				kept = append(kept, n)
				continue
			}
			r.decideNode(n)
			progress = true
		}
		notified := r.pending
		r.pending = append(kept, notified...)
		r.spare = notified[:0] // copied out: free for the next round's batch
		if !progress && len(r.pending) > 0 && r.running == 0 && len(r.queue) == 0 && len(r.waiting) == 0 {
			for k, n := range r.pending {
				if r.firedCount[n] > 0 && !r.busy(n) {
					r.pending = append(r.pending[:k:k], r.pending[k+1:]...)
					r.decideNode(n)
					progress = true
					break
				}
			}
			if !progress { // nothing fired anywhere: everything left is skipped
				for _, n := range append([]int(nil), r.pending...) {
					if !r.busy(n) {
						r.removePending(n)
						r.decideNode(n)
						progress = true
					}
				}
			}
		}
	}
}

func (r *runner) removePending(n int) {
	for k, m := range r.pending {
		if m == n {
			r.pending = append(r.pending[:k], r.pending[k+1:]...)
			return
		}
	}
}

func (r *runner) busy(n int) bool {
	s := r.nodes[n].Status
	return s == NodeQueued || s == NodeRunning || s == NodeWaiting
}

// decideNode runs or skips a pending node and consumes its fired inputs.
func (r *runner) decideNode(n int) {
	r.inPending[n] = false
	in := r.plan.in[n]
	if cap(r.firedBuf) < len(in) {
		r.firedBuf = make([]bool, len(in))
	}
	fired := r.firedBuf[:len(in)] // read by decide alone, before anything else runs
	clear(fired)
	var inputs []string
	for k, ei := range in {
		if r.fired[ei] {
			fired[k] = true
			inputs = append(inputs, r.nodes[r.plan.edges[ei].src].Output)
			r.fired[ei] = false
		}
	}
	r.firedCount[n] = 0
	run, reason := r.plan.nodes[n].join.decide(r, n, fired)
	if run {
		r.enqueue(n, strings.Join(inputs, "\n\n"), r.nodes[n].Rejection)
		return
	}
	if r.nodes[n].Visits > 0 || r.nodes[n].lastStatus() == NodeSkipped {
		// In a cycle, a branch not taken back into a node that already ran
		// (or was skipped: skipping it again would go round the cycle for
		// ever) is no new visit: keep its result, and propagate nothing.
		if r.nodes[n].Status == NodePending {
			r.stateMu.Lock()
			r.nodes[n].Status = r.nodes[n].lastStatus()
			r.stateMu.Unlock()
			r.markDirty(n)
		}
		return
	}
	r.skip(n, reason)
}

// skip marks a node skipped and lets the skip propagate.
func (r *runner) skip(n int, reason string) {
	r.markSkipped(n, reason)
	r.notifyOut(n, "")
}

// markSkipped records node n as skipped, with its step_end event.
func (r *runner) markSkipped(n int, reason string) {
	ns := r.nodes[n]
	now := time.Now().UTC()
	r.stateMu.Lock()
	ns.Status = NodeSkipped
	ns.FinishedAt = &now
	r.stateMu.Unlock()
	r.markDirty(n)
	r.emit(r.plan.nodes[n].id, EvStepEnd, "skipped", map[string]any{"status": NodeSkipped, "reason": reason})
}

// blocked reports whether node n must wait: it is still busy with a
// previous visit, or an input that has not fired can still fire.
func (r *runner) blocked(n int) bool {
	if r.busy(n) {
		return true
	}
	in := r.plan.in[n]
	if r.firedCount[n] == len(in) {
		return false
	}
	for _, ei := range in {
		if !r.fired[ei] && r.canStillFire(r.plan.edges[ei].src, n) {
			return true
		}
	}
	return false
}

// canStillFire reports whether node s may still run (and so fire an edge
// into n) in this run. In an acyclic plan that is "reachable and not yet
// settled". With cycles, s can fire if it is active, or reachable from an
// active node without passing through n.
func (r *runner) canStillFire(s, n int) bool {
	if s == n || !r.plan.reachable[s] {
		// A self-loop fires only after n runs: it cannot hold up the
		// decision to run n (it would deadlock n on itself).
		return false
	}
	if r.plan.acyclic {
		return !r.nodes[s].Status.Settled()
	}
	if r.activeOrDue(s) {
		return true
	}
	seen := make([]bool, len(r.plan.nodes))
	seen[n] = true
	var stack []int
	for i := range r.nodes {
		if i != n && r.activeOrDue(i) {
			seen[i] = true
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, ei := range r.plan.out[v] {
			d := r.plan.edges[ei].dst
			if d == s {
				return true
			}
			if !seen[d] {
				seen[d] = true
				stack = append(stack, d)
			}
		}
	}
	return false
}

// activeOrDue: the node is active or certain to run.
func (r *runner) activeOrDue(i int) bool {
	return r.busy(i) || (r.inPending[i] && r.firedCount[i] > 0)
}
