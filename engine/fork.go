package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Forking a run from a node ("run from here", n8n's retry from a node,
// LangGraph's checkpoints): a new run of the same workflow in which every
// node upstream of the chosen one takes the result it had in the parent
// run instead of running (optionally with some outputs edited: pinned
// data), and the chosen node and everything after it run. The reused
// results are the fork's first event (run_forked), so a fork continued
// after a crash reuses the same ones; it is otherwise a run like any other.

// ErrNotForkable: the run cannot be forked (it has not ended, or the node
// or a pinned node is not where a fork can take it).
var ErrNotForkable = errors.New("cannot fork the run there")

// ErrRunNotEnded: the run to fork is still running or paused (it is also
// ErrNotForkable).
var ErrRunNotEnded = fmt.Errorf("%w: only a run that ended can be forked", ErrNotForkable)

// ForkOptions are a fork's choices.
type ForkOptions struct {
	// Pinned replaces the parent's outputs of nodes upstream of the fork
	// point, by node id.
	Pinned map[string]string
	// Input, when set, replaces the parent's input.
	Input *string
}

// forkData is a forked run's first event's data.
type forkData struct {
	ParentRunID string                  `json:"parentRunId"`
	FromNode    string                  `json:"fromNode"`
	Reused      map[string]reusedResult `json:"reused"`
}

type reusedResult struct {
	Output string `json:"output"`
	Handle string `json:"handle,omitempty"`
	Edited bool   `json:"edited,omitempty"` // pinned by the user, not the parent's
}

// Fork starts a run of parent's workflow from nodeID (see above). The
// parent must have ended (completed, failed or cancelled).
func (e *Engine) Fork(ctx context.Context, parentID, nodeID string, opt ForkOptions) (*Run, error) {
	parent, states, _, err := e.store.LoadRun(ctx, parentID)
	if err != nil {
		return nil, err
	}
	if !parent.Status.Terminal() {
		return nil, fmt.Errorf("run %s is %s: %w", parentID, parent.Status, ErrRunNotEnded)
	}
	p, err := e.planFor(parent)
	if err != nil {
		return nil, err
	}
	from, ok := p.index[nodeID]
	if !ok {
		return nil, fmt.Errorf("run %s has no node %q: %w", parentID, nodeID, ErrNotForkable)
	}
	up := upstreamOf(p, from)
	byID := make(map[string]*NodeState, len(states))
	for _, st := range states {
		byID[st.NodeID] = st
	}
	fd := &forkData{ParentRunID: parentID, FromNode: nodeID, Reused: map[string]reusedResult{}}
	for i, isUp := range up {
		if st := byID[p.nodes[i].id]; isUp && st != nil && st.Status == NodeCompleted {
			fd.Reused[st.NodeID] = reusedResult{Output: st.Output, Handle: st.Handle}
		}
	}
	ids := make([]string, 0, len(opt.Pinned))
	for id := range opt.Pinned {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		i, ok := p.index[id]
		if !ok || !up[i] {
			return nil, fmt.Errorf("node %q is not upstream of %q: %w: only the output of a node before the fork point can be pinned", id, nodeID, ErrNotForkable)
		}
		r := fd.Reused[id]
		r.Output, r.Edited = opt.Pinned[id], true
		fd.Reused[id] = r
	}
	so := StartOptions{WorkflowID: parent.WorkflowID, WorkDir: parent.WorkDir, Input: parent.Input, runID: newRunID(), fork: fd}
	if opt.Input != nil {
		so.Input = *opt.Input
	}
	if err := os.MkdirAll(filepath.Join(e.cfg.ArtifactsRoot, so.runID), 0o755); err != nil {
		return nil, fmt.Errorf("create artifacts dir: %w", err)
	}
	return e.start(ctx, p, parent.Kind, parent.Definition, so, seedFor(parent.Kind, so.Input))
}

// upstreamOf marks the nodes from which node can be reached along
// execution edges, leaving out node itself and every node reachable from
// it (in a loop through node, those run again after it).
func upstreamOf(p *plan, node int) []bool {
	down := make([]bool, len(p.nodes))
	stack := []int{node}
	down[node] = true
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, ei := range p.out[v] {
			if d := p.edges[ei].dst; !down[d] {
				down[d] = true
				stack = append(stack, d)
			}
		}
	}
	up := make([]bool, len(p.nodes))
	stack = []int{node}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, ei := range p.in[v] {
			if s := p.edges[ei].src; !up[s] && !down[s] {
				up[s] = true
				stack = append(stack, s)
			}
		}
	}
	return up
}

// pinnedResult is the parent's result a fork reuses for node i: on its
// first visit only (a later visit is new work).
func (r *runner) pinnedResult(i int) (Result, bool) {
	if r.fork == nil || r.nodes[i].Visits != 1 {
		return Result{}, false
	}
	rr, ok := r.fork.Reused[r.plan.nodes[i].id]
	if !ok {
		return Result{}, false
	}
	return Result{Output: rr.Output, Handle: rr.Handle}, true
}

// restoreFork finds a forked run's reused results in its log.
func (r *runner) restoreFork(evs []Event) {
	for _, ev := range evs {
		if ev.Type != EvRunForked {
			continue
		}
		var fd forkData
		if json.Unmarshal(ev.Data, &fd) == nil {
			r.fork = &fd
		}
		return
	}
}

// ForkOf reads which run a run was forked from, and at which node, from
// its first events ("" when it is no fork).
func ForkOf(evs []Event) (parentRunID, fromNode string) {
	for _, ev := range evs {
		if ev.Type == EvRunForked {
			var fd forkData
			if json.Unmarshal(ev.Data, &fd) == nil {
				return fd.ParentRunID, fd.FromNode
			}
		}
	}
	return "", ""
}
