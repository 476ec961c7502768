// Package engine runs workflows: visual graphs and YAML DAGs share one
// scheduler, one executor per node type, variable substitution, and the LLM
// provider. It persists through the Store interface and reports every step
// as an Event; it knows nothing of SQLite, HTTP or websockets.
package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/llm"
)

// RunStatus is a run's lifecycle state:
// pending → running → (paused ⇄ running) → completed | failed | cancelled.
// interrupted marks a run whose process died and which was left for the user
// (--no-recover) to resume or cancel.
type RunStatus string

// Run statuses.
const (
	StatusPending     RunStatus = "pending"
	StatusRunning     RunStatus = "running"
	StatusPaused      RunStatus = "paused"
	StatusCompleted   RunStatus = "completed"
	StatusFailed      RunStatus = "failed"
	StatusCancelled   RunStatus = "cancelled"
	StatusInterrupted RunStatus = "interrupted"
)

// Terminal reports whether no further transition can happen.
func (s RunStatus) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// NodeStatus is one node's state within a run.
type NodeStatus string

// Node statuses. The zero value "" means idle: not reached (yet).
const (
	NodeIdle      NodeStatus = ""
	NodePending   NodeStatus = "pending" // some inputs arrived; waiting for the others to settle
	NodeQueued    NodeStatus = "queued"  // decided to run; waiting for a slot or for the run to resume
	NodeRunning   NodeStatus = "running"
	NodeWaiting   NodeStatus = "waiting" // paused for a human (approval, interactive loop gate)
	NodeCompleted NodeStatus = "completed"
	NodeFailed    NodeStatus = "failed"
	NodeSkipped   NodeStatus = "skipped"
)

// Settled reports whether the node's current visit has ended.
func (s NodeStatus) Settled() bool {
	return s == NodeCompleted || s == NodeFailed || s == NodeSkipped
}

// Workflow kinds.
const (
	KindGraph = "graph"
	KindYAML  = "yaml"
)

// Event types. Every event is also a line of the live log.
const (
	EvStepStart         = "step_start"
	EvStartPrompt       = "start_prompt"
	EvLLMDelta          = "llm_delta"
	EvLLMResponse       = "llm_response"
	EvLLMError          = "llm_error"
	EvLogicCheck        = "logic_check"
	EvWaitInput         = "wait_input"
	EvInputReceived     = "input_received"
	EvStepEnd           = "step_end"
	EvError             = "error"
	EvWarning           = "warning"
	EvRunStatus         = "run_status"
	EvOutput            = "output" // a line of a bash/script node's output
	EvSubagentCallStart = "subagent_call_start"
	EvSubagentCallEnd   = "subagent_call_end"
	EvSubagentCallError = "subagent_call_error"
	// An agent's tool loop: llm_turn is a model turn's text when it also
	// called tools (data: session, turn, toolCalls); tool_call one call
	// (data: session, turn, callId, tool, arguments with long strings cut);
	// tool_result its result as the model saw it (data: callId, tool, ok,
	// denied, bytes before cutting, cut, durationMs). See agent_loop.go.
	EvToolCall   = "tool_call"
	EvToolResult = "tool_result"
	EvLLMTurn    = "llm_turn"
	// EvProcessStart records the process group of a bash or script node's
	// subprocess (data: pgid, start, host): the process that takes the run
	// over after a crash kills what is left of it before rerunning the node.
	EvProcessStart = "process_start"
	// EvRunForked is a forked run's first event (data: parentRunId,
	// fromNode, reused: the parent's results it takes, by node id).
	EvRunForked = "run_forked"
)

// SystemNodeID is the NodeID of run-level events.
const SystemNodeID = "system"

// Event is one entry of a run's log. Seq is 1, 2, 3, ... per run, gapless.
type Event struct {
	Seq       int64           `json:"seq"`
	RunID     string          `json:"runId"`
	NodeID    string          `json:"nodeId"`
	Type      string          `json:"type"`
	Content   string          `json:"content"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data,omitempty"`
	// Owner is the lease owner that emitted the event: a store writes it only
	// while that owner still holds the run, so a stalled process whose run
	// was taken over cannot write into its log. "" skips the check.
	Owner string `json:"-"`
}

// Usage counts model tokens, as the provider reported them. CostUSD is set
// when a price table (Config.Prices) priced at least one of the calls;
// calls of models without a price add nothing to it.
type Usage struct {
	PromptTokens     int64    `json:"promptTokens"`
	CompletionTokens int64    `json:"completionTokens"`
	TotalTokens      int64    `json:"totalTokens"`
	CostUSD          *float64 `json:"costUsd,omitempty"`
}

// Add returns the sum of u and v. It never modifies a CostUSD in place, so
// copies of a Usage may share the pointer.
func (u Usage) Add(v Usage) Usage {
	out := Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens: u.TotalTokens + v.TotalTokens}
	if u.CostUSD != nil || v.CostUSD != nil {
		var c float64
		if u.CostUSD != nil {
			c += *u.CostUSD
		}
		if v.CostUSD != nil {
			c += *v.CostUSD
		}
		out.CostUSD = &c
	}
	return out
}

// IsZero reports whether nothing was counted.
func (u Usage) IsZero() bool {
	return u.PromptTokens == 0 && u.CompletionTokens == 0 && u.TotalTokens == 0 && u.CostUSD == nil
}

// PendingApproval is a node waiting for a human decision.
type PendingApproval struct {
	NodeID string    `json:"nodeId"`
	Prompt string    `json:"prompt"`
	Input  string    `json:"input"` // the output being approved
	Since  time.Time `json:"since"`
	// Tool is set when an agent's tool call waits (approve_tools).
	Tool *ToolApproval `json:"tool,omitempty"`
}

// Run is a run's header: everything but per-node state.
type Run struct {
	ID               string            `json:"runId"`
	WorkflowID       string            `json:"workflowId,omitempty"`
	Kind             string            `json:"kind"`
	Definition       json.RawMessage   `json:"definition"` // snapshot: normalized graph JSON or YAML source
	Status           RunStatus         `json:"status"`
	Input            string            `json:"input"`
	WaitingForInput  bool              `json:"waitingForInput"`
	CurrentNodeID    string            `json:"currentNodeId,omitempty"`
	PendingApprovals []PendingApproval `json:"pendingApprovals"`
	Error            string            `json:"error,omitempty"`
	WorkDir          string            `json:"workDir,omitempty"`
	// Owner fences writes: a Checkpoint of a header with Owner set succeeds
	// only while that owner holds the run (ErrConflict otherwise: the lease
	// was lost and another process drives the run now).
	Owner string `json:"-"`
	// LeaseUntil is read by CreateRun only: a new run with Owner set is
	// stored already held by Owner until then, which saves the engine an
	// AcquireRun round trip on every start.
	LeaseUntil time.Time `json:"-"`
	// SameStatus is read by Checkpoint only: the driver's last committed
	// write of this run (its creation or a checkpoint) had this Status,
	// which is not terminal. Only a run's driver writes its status, fenced
	// by its lease, so the stored status is still Status, and the store
	// may leave status, finished_at and the lease columns alone (in SQLite,
	// rewriting them costs an update of three indexes per checkpoint).
	SameStatus bool `json:"-"`
	// Usage adds up the tokens of every model call the run made (subagents
	// and calls of nodes that failed later included) and their cost when a
	// price table is configured.
	Usage      Usage      `json:"usage,omitzero"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// NodeState is one node's persisted state within a run. Input is the input
// the node runs (or ran) with; Fired lists the ids of incoming edges that have
// fired for the node's next visit; Wait is an executor's private state while
// the node waits for a human.
type NodeState struct {
	NodeID   string     `json:"nodeId"`
	Status   NodeStatus `json:"status"`
	Input    string     `json:"input,omitempty"`
	Output   string     `json:"output,omitempty"`
	Handle   string     `json:"handle,omitempty"` // the branch a completed node took
	Error    string     `json:"error,omitempty"`
	Visits   int        `json:"visits"`
	Attempts int        `json:"attempts"`
	Fired    []string   `json:"fired,omitempty"`
	// Rejection is the approval rejection note in effect for this visit
	// ($REJECTION_REASON); it flows along the edges the node activates.
	Rejection string `json:"rejection,omitempty"`
	// Decision is a human decision claimed for this waiting node, stored with
	// the claim so that a crash before it is applied does not lose it.
	Decision   json.RawMessage `json:"decision,omitempty"`
	Wait       json.RawMessage `json:"wait,omitempty"`
	StartedAt  *time.Time      `json:"startedAt,omitempty"`
	FinishedAt *time.Time      `json:"finishedAt,omitempty"`
}

// Errors callers check with errors.Is.
var (
	ErrNotFound        = errors.New("not found")
	ErrConflict        = errors.New("conflict")
	ErrNotWaiting      = errors.New("node is not waiting for input")
	ErrNotPaused       = errors.New("run is not paused")
	ErrInvalidDecision = errors.New("decision must be approve or reject")
	ErrNoLLM           = llm.ErrNotConfigured
	ErrNoClaude        = errors.New("provider claude is not configured: set ANTHROPIC_API_KEY")
	ErrInvalidWorkflow = errors.New("invalid workflow")
	ErrTerminal        = errors.New("run has already ended")
	// ErrStorageFull: the store cannot write because its disk (or its
	// size cap) is full; nothing of the refused write was stored.
	ErrStorageFull = errors.New("disk full")
	// ErrLeaseLost: this process no longer holds the run's lease.
	ErrLeaseLost = errors.New("run lease lost to another process")
	// ErrDrivenElsewhere: another live process holds the run's lease.
	ErrDrivenElsewhere = errors.New("driven elsewhere: another live process holds the run")
	// ErrCancelPending: the cancel was requested from the process that
	// drives the run, which has not stopped it yet.
	ErrCancelPending = errors.New("cancel requested; the process driving the run has not stopped it yet")
)

// InvalidError carries the problems of a workflow that failed validation.
type InvalidError struct {
	Problems []graph.Problem
}

func (e *InvalidError) Error() string {
	var msgs []string
	for _, p := range e.Problems {
		if p.IsError() {
			msgs = append(msgs, fmt.Sprintf("%s: %s", p.Code, p.Message))
		}
	}
	return "invalid workflow: " + strings.Join(msgs, "; ")
}

// Unwrap makes errors.Is(err, ErrInvalidWorkflow) true.
func (e *InvalidError) Unwrap() error { return ErrInvalidWorkflow }

// lastStatus is the status a node had after its last visit.
func (n *NodeState) lastStatus() NodeStatus {
	switch {
	case n.Error != "":
		return NodeFailed
	case n.FinishedAt != nil && n.Visits == 0:
		return NodeSkipped // skip sets FinishedAt; every run counts a visit
	case n.FinishedAt != nil:
		return NodeCompleted
	}
	return NodeIdle
}
