// Package yamlflow loads YAML DAG workflows (the Archon-compatible format:
// name, description and a list of nodes of seven kinds) into a validated
// Workflow, and implements the `when:` condition language those nodes use.
//
// Loading never stops at the first problem: every error and warning is
// collected as a Diagnostic carrying the file, the YAML line and the node id,
// so an editor or `switchyard validate` can show them all at once.
package yamlflow

import (
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/switchyard/switchyard/graph"
)

// Kind is a node's type. A YAML node chooses its kind by which key it has.
type Kind string

// The seven node kinds.
const (
	KindCommand  Kind = "command"
	KindPrompt   Kind = "prompt"
	KindBash     Kind = "bash"
	KindScript   Kind = "script"
	KindLoop     Kind = "loop"
	KindApproval Kind = "approval"
	KindCancel   Kind = "cancel"
)

// Kinds lists every node kind in the order messages name them.
var Kinds = []Kind{KindCommand, KindPrompt, KindBash, KindScript, KindLoop, KindApproval, KindCancel}

// IsAI reports whether nodes of kind k talk to a model (and so take the
// model, provider, systemPrompt, effort, output_format, context and
// idle_timeout fields).
func (k Kind) IsAI() bool { return k == KindCommand || k == KindPrompt || k == KindLoop }

// Trigger rules: when a node with dependencies may start.
const (
	TriggerAllSuccess              = "all_success"
	TriggerOneSuccess              = "one_success"
	TriggerNoneFailedMinOneSuccess = "none_failed_min_one_success"
	TriggerAllDone                 = "all_done"
)

// TriggerRules lists the accepted trigger rules.
var TriggerRules = []string{TriggerAllSuccess, TriggerOneSuccess, TriggerNoneFailedMinOneSuccess, TriggerAllDone}

// Context modes of AI nodes.
const (
	ContextFresh  = "fresh"
	ContextShared = "shared"
)

// Script runtimes.
const (
	RuntimeBun = "bun"
	RuntimeUV  = "uv"
)

// Retry on_error modes.
const (
	RetryOnTransient = "transient"
	RetryOnAll       = "all"
)

// Defaults and limits of the format.
const (
	DefaultRetryDelayMS          = 3000
	MinRetryDelayMS              = 1000
	MaxRetryDelayMS              = 60000
	MinRetryAttempts             = 1
	MaxRetryAttempts             = 5
	DefaultOnRejectMaxAttempts   = 3
	MaxOnRejectAttempts          = 10
	MaxFileSize                  = 4 << 20 // a workflow is hand-written text; anything bigger is a mistake
	maxValueNodes                = 100000  // bound on alias expansion when copying values (billion laughs)
	maxValueDepth                = 200
	defaultNodeContextForAINodes = ContextFresh
)

// Workflow is a loaded YAML DAG workflow.
type Workflow struct {
	Name            string
	Description     string
	Provider        string // default provider for AI nodes ("" = engine default)
	Model           string // default model for AI nodes ("" = engine default)
	Interactive     bool
	MutatesCheckout bool // default true
	Tags            []string
	// PassEnv names environment variables of the Switchyard process that
	// this workflow's bash and script nodes may see (beyond the allowlist).
	PassEnv []string
	// Worktree is the `worktree:` block (Archon's isolation setting); nil
	// when the file has none.
	Worktree *WorktreeConfig
	Nodes    []*Node
	// Includes lists the workflow files inlined by `include:` nodes (nested
	// ones too), each once, in the order they were first read.
	Includes []IncludedWorkflow

	// File is the path the workflow was loaded from, as given to Load/Parse.
	File string
	// Dir is the folder of File (absolute when loaded with Load).
	Dir string
	// Extra keeps top-level keys Switchyard does not implement, by key, so
	// nothing the author wrote is silently lost (each one also produced a
	// warning).
	Extra map[string]any

	index map[string]*Node
}

// Node returns the first node with the given id, or nil. Load builds an
// index once, so concurrent callers only read it; a Workflow built by hand
// (no index) is searched linearly.
func (w *Workflow) Node(id string) *Node {
	if w == nil {
		return nil
	}
	if w.index != nil {
		return w.index[id]
	}
	for _, n := range w.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

func (w *Workflow) buildIndex() {
	w.index = make(map[string]*Node, len(w.Nodes))
	for _, n := range w.Nodes {
		if _, dup := w.index[n.ID]; !dup && n.ID != "" {
			w.index[n.ID] = n
		}
	}
}

// WorktreeConfig is a workflow's `worktree:` block: whether a run gets an
// isolated git worktree. Enabled is nil when the file does not say.
type WorktreeConfig struct {
	Enabled *bool
}

// NodeOrigin is where an inlined node was written.
type NodeOrigin struct {
	Workflow string // the include target as written (`include: archon-review-block`)
	File     string // the file that holds the node, as the include resolver named it
	ID       string // the node's id in that file
	Line     int    // the node's line in that file
}

// IncludedWorkflow is one workflow file an `include:` inlined (directly or
// through another include), with the source that was used: enough for
// SourcesIncludeResolver to load the workflow again without the files.
type IncludedWorkflow struct {
	Name   string `json:"name"` // the include target as written
	File   string `json:"file"`
	Source string `json:"source"`
}

// Retry is a node's retry policy.
type Retry struct {
	MaxAttempts int    // 1..5
	DelayMS     int    // default 3000
	OnError     string // "transient" (default) or "all"
}

// Loop is the body of a loop node: an AI prompt repeated until its output
// contains Until (or UntilBash exits 0), at most MaxIterations times.
type Loop struct {
	Prompt        string
	Until         string
	MaxIterations int
	FreshContext  bool
	Interactive   bool
	GateMessage   string // required when Interactive
	UntilBash     string
}

// Approval is the body of an approval node: a human gate.
type Approval struct {
	Message         string
	CaptureResponse bool
	OnReject        *OnReject
}

// OnReject says what an approval node does when the reviewer rejects: run
// Prompt with the reviewer's feedback and ask again, at most MaxAttempts times.
type OnReject struct {
	Prompt      string
	MaxAttempts int // 1..10, default 3
}

// Node is one node of a workflow.
type Node struct {
	ID   string
	Kind Kind
	Line int // YAML line of the node's mapping (its first key)

	// Common fields.
	DependsOn   []string // graph edges: ids of nodes this one waits for
	When        string   // raw `when:` text ("" = no condition)
	WhenExpr    *Expr    // parsed When; nil when When is "" or did not parse
	TriggerRule string   // normalized; default "all_success"
	Retry       *Retry   // nil = no retry
	TimeoutMS   int      // 0 = engine default
	OutputType  string
	AlwaysRun   bool

	// AI fields (command, prompt and loop nodes only).
	Model         string
	Provider      string
	SystemPrompt  string
	Effort        string
	OutputFormat  map[string]any // raw JSON Schema; nil when absent
	Context       string         // "fresh" or "shared" on AI nodes ("fresh" by default), "" otherwise
	IdleTimeoutMS int            // 0 = engine default

	// Agent fields (AI nodes only). AllowedTools nil means the field is
	// absent (the engine's default tools); non-nil and empty (`[]`) means no
	// tools at all. Entries are tool names or '*' globs (see
	// graph.MatchToolName);
	// ToolEnabled applies both lists.
	AllowedTools []string
	DeniedTools  []string
	// DeniedCalls are denied_tools entries in the Tool(argument) form
	// (Bash(git push:*)): the tool stays offered, and a call they match is
	// refused with an error result the model sees.
	DeniedCalls []graph.ToolPattern
	// ApproveTools lists the calls that wait for a person's approval before
	// they run (see graph.ToolPattern for the matching rule).
	ApproveTools []graph.ToolPattern
	MaxTurns     int        // 0 = engine default (DefaultMaxTurns)
	MCP          *MCPConfig // nil = no MCP servers
	Hooks        *Hooks     // nil = none (see hooks.go)
	// Skills names Claude Code skills (a folder with a SKILL.md under
	// .claude/skills or .agents/skills of the run's folder, or
	// ~/.claude/skills) loaded into the node's system prompt.
	Skills []string

	// Per kind.
	Command      string   // command: the command file's name
	Prompt       string   // prompt: inline prompt text
	Bash         string   // bash: shell script
	Script       string   // script: inline code, or a named script (see ScriptNamed)
	ScriptNamed  bool     // script: Script is a named script, not inline code
	Runtime      string   // script: "bun" or "uv"
	Deps         []string // script: packages to install (not graph edges)
	Loop         *Loop
	Approval     *Approval
	CancelReason string // cancel: the reason string

	// Extra keeps node fields Switchyard does not implement (hooks,
	// skills, ...), by key. Each one also produced a warning.
	Extra map[string]any

	// IncludedFrom is the id of the include node of this workflow the node
	// was inlined from ("review" for review__sync); "" for the file's own
	// nodes. Nodes of nested includes name the outermost include.
	IncludedFrom string
	// Origin says where an inlined node was written; nil for the file's own
	// nodes.
	Origin *NodeOrigin

	// includeNode marks an `include:` node; after a successful expansion
	// none is left. include is its target as written.
	includeNode bool
	include     string
	// refs maps every node id visible in the file the node was written in
	// to its id in this (flattened) workflow; nil = every id is itself.
	refs map[string]string
	// written is the node as its file wrote it, when loading rewrote its
	// references (includes); the canvas shows that.
	written *Node

	outputSchema *jsonschema.Schema
	depLines     []int          // line of each DependsOn entry
	lines        map[string]int // line of each field, by dotted name
}

// fieldLine is the YAML line of a field of n, or the node's line.
func (n *Node) fieldLine(name string) int {
	if l := n.lines[name]; l > 0 {
		return l
	}
	return n.Line
}

func (n *Node) setLine(name string, line int) {
	if n.lines == nil {
		n.lines = map[string]int{}
	}
	n.lines[name] = line
}

// IsAI reports whether the node talks to a model.
func (n *Node) IsAI() bool { return n.Kind.IsAI() }

// OutputSchema is the compiled OutputFormat, or nil when the node has none.
// The engine validates a structured output with OutputSchema().Validate(v),
// where v is the output decoded with encoding/json (or
// jsonschema.UnmarshalJSON).
func (n *Node) OutputSchema() *jsonschema.Schema { return n.outputSchema }

// IsYAMLFile reports whether path names a YAML file (.yaml or .yml).
func IsYAMLFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return true
	}
	return false
}
