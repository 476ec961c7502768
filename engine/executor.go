package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Executor runs one node type. Execute gets everything through x; it
// returns the node's output and, for branching nodes, the handle taken.
type Executor interface {
	Execute(ctx context.Context, x *Exec) (Result, error)
}

// Resumer is implemented by executors whose nodes wait for a human
// (approval nodes, interactive loops). Resume is called with the decision
// and may finish the node or wait again.
type Resumer interface {
	Resume(ctx context.Context, x *Exec, d Decision) (Result, error)
}

// inliner marks executors that never block (start, if, approval): the
// scheduler calls them on its own goroutine instead of spawning one.
type inliner interface{ inline() }

// Result is what a node produced.
type Result struct {
	Output string
	// Handle is the branch taken; "" means the node's default output.
	Handle string
	// Wait, when set, parks the node until a human decides.
	Wait *Wait
	// Decided is set by nodes that answered a human decision; their
	// Rejection (the reject note, or "" on approve) then replaces the note
	// that flows to the nodes they activate (see $REJECTION_REASON).
	Decided   bool
	Rejection string
	// CancelRun ends the run as cancelled with this reason (YAML cancel nodes,
	// approvals rejected for good).
	CancelRun string
}

// Wait describes why a node waits and keeps the executor's private state.
type Wait struct {
	Prompt string
	State  json.RawMessage
	// Tool is set when the wait is a tool call that needs a reviewer
	// (approve_tools): the inbox and the canvas show the call.
	Tool *ToolApproval
}

// ToolApproval is a tool call an agent made that waits for a reviewer.
type ToolApproval struct {
	CallID    string          `json:"callId"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Diff shows what a Write or Edit would change, as a unified diff.
	Diff string `json:"diff,omitempty"`
}

// Decision answers a waiting node.
type Decision struct {
	Decision string `json:"decision"` // approve | reject (any case)
	Note     string `json:"note"`
	// CallID names the tool call a decision answers; the engine fills it
	// in from the wait before the decision is claimed, so a decision
	// re-applied after a crash still finds its call.
	CallID string `json:"callId,omitempty"`
}

// normalize checks and lowercases the decision; anything else fails closed.
func (d Decision) normalize() (Decision, error) {
	d.Decision = strings.ToLower(strings.TrimSpace(d.Decision))
	if d.Decision != "approve" && d.Decision != "reject" {
		return d, fmt.Errorf("%w: got %q", ErrInvalidDecision, d.Decision)
	}
	return d, nil
}

// Exec is a node's view of its run while it executes.
type Exec struct {
	r         *runner
	node      *planNode
	idx       int
	Input     string
	Visit     int
	Attempt   int
	Rejection string
	// WaitState is the executor's state saved with its last Wait.
	WaitState json.RawMessage
}

// NodeID is the executing node's id.
func (x *Exec) NodeID() string { return x.node.id }

// Spec is the node definition (graph.Node for drawn graphs).
func (x *Exec) Spec() any { return x.node.spec }

// RunID is the run's id.
func (x *Exec) RunID() string { return x.r.run.ID }

// RunInput is the run's input ($ARGUMENTS).
func (x *Exec) RunInput() string { return x.r.run.Input }

// WorkDir is the run's working directory.
func (x *Exec) WorkDir() string { return x.r.run.WorkDir }

// Emit adds an event to the run's log for this node.
func (x *Exec) Emit(typ, content string, data any) { x.r.emit(x.node.id, typ, content, data) }

// Engine returns the engine running the node.
func (x *Exec) Engine() *Engine { return x.r.e }

// Output returns another node's latest output and status; ok is false
// when the run has no node with that id.
func (x *Exec) Output(nodeID string) (out string, status NodeStatus, ok bool) {
	i, ok := x.r.plan.index[nodeID]
	if !ok {
		return "", NodeIdle, false
	}
	x.r.stateMu.RLock()
	defer x.r.stateMu.RUnlock()
	ns := x.r.nodes[i]
	return ns.Output, ns.Status, true
}

// ArtifactsDir returns the run's artifact folder, creating it on first use.
func (x *Exec) ArtifactsDir() (string, error) {
	dir := filepath.Join(x.r.e.cfg.ArtifactsRoot, x.r.run.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create artifacts dir: %w", err)
	}
	return dir, nil
}

// Now is the engine clock.
func (x *Exec) Now() time.Time { return time.Now() }
