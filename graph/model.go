// Package graph holds Switchyard's visual workflow model (the React Flow
// shape the editor draws), legacy normalization and validation. The editor,
// the engine, the API and the CLI all go through this one package.
package graph

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/switchyard/switchyard/internal/jsonw"
)

// Node types of a visual graph.
const (
	TypeStart    = "start"
	TypeAgent    = "agent"
	TypeIf       = "if"
	TypeApproval = "approval"
)

// Handle names.
const (
	HandleOutput   = "output"
	HandleInput    = "input"
	HandleFalse    = "false"
	HandleApprove  = "approve"
	HandleReject   = "reject"
	HandleSubagent = "subagent"
	// HandleConditionPrefix is followed by the condition index: condition-0, condition-1, ...
	HandleConditionPrefix = "condition-"
)

// Condition operators.
const (
	OpEqual    = "equal"
	OpContains = "contains"
)

// Graph is a visual workflow in the current (React Flow) shape.
type Graph struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
}

// Position is a node's place on the canvas.
type Position struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Node is one node of a visual graph.
type Node struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Position Position `json:"position"`
	Data     NodeData `json:"data"`
}

// Tools are the tool switches of an agent node.
type Tools struct {
	WebSearch bool `json:"web_search"`
	Subagents bool `json:"subagents"`
	// Builtin names the built-in tools the agent may call (Read, Write,
	// Edit, Glob, Grep, Bash, LS); none unless listed.
	Builtin []string `json:"builtin,omitempty"`
	// Approve lists tool patterns whose calls wait for a reviewer
	// (Bash, Write, mcp__github__create_*, Bash(git push:*)).
	Approve []string `json:"approve,omitempty"`
	// MCP names servers of serve --mcp-config the agent may use.
	MCP []string `json:"mcp,omitempty"`
}

// Condition is one test of an if node.
type Condition struct {
	Operator string `json:"operator"`
	Value    string `json:"value"`
}

// NodeData is the union of every node type's data. Fields that Switchyard
// does not know (labels, UI state, future fields) are kept in Extra and
// written back unchanged, so a round trip through the backend never loses
// what an editor stored.
type NodeData struct {
	// start
	InitialInput string `json:"initialInput,omitempty"`
	// agent
	AgentName       string `json:"agentName,omitempty"`
	SystemPrompt    string `json:"systemPrompt,omitempty"`
	UserPrompt      string `json:"userPrompt,omitempty"`
	Model           string `json:"model,omitempty"`
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	Tools           *Tools `json:"tools,omitempty"`
	// if
	Conditions []Condition `json:"conditions,omitempty"`
	// Condition is the legacy single-condition form of an if node; Normalize
	// turns it into Conditions.
	Condition string `json:"condition,omitempty"`
	// approval
	Prompt string `json:"prompt,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

// knownDataFields are the NodeData keys with a struct field.
var knownDataFields = map[string]bool{
	"initialInput": true, "agentName": true, "systemPrompt": true, "userPrompt": true,
	"model": true, "reasoningEffort": true, "tools": true, "conditions": true,
	"condition": true, "prompt": true,
}

type nodeDataAlias NodeData

// UnmarshalJSON decodes the known fields and keeps the rest in Extra.
func (d *NodeData) UnmarshalJSON(b []byte) error {
	extra, ok := dataExtras(b)
	if !ok {
		return d.unmarshalSlow(b)
	}
	var a nodeDataAlias
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	a.Extra = extra
	*d = NodeData(a)
	return nil
}

// dataExtras reads the members of the object b in one pass and returns
// the unknown ones, as decoding b into a map[string]json.RawMessage would
// (the last of a repeated key wins). ok is false wherever unmarshalSlow
// must decide: b is not one valid object, a key has an escape or invalid
// UTF-8 (encoding/json unescapes and repairs those), or a key is a known
// field's but for case. A graph's nodes are decoded this way:
// the map that unmarshalSlow builds for every node was half of the
// allocations of preparing a new graph (BenchmarkPrepareFanoutGraph).
func dataExtras(b []byte) (map[string]json.RawMessage, bool) {
	var extra map[string]json.RawMessage
	ok := jsonw.Members(b, func(key []byte, i int) (int, bool) {
		end, ok := jsonw.SkipValue(b, i)
		if !ok || knownDataFields[string(key)] {
			return end, ok
		}
		k := string(key)
		if foldsToKnownField(k) {
			return end, false
		}
		if extra == nil {
			extra = make(map[string]json.RawMessage)
		}
		extra[k] = json.RawMessage(bytes.Clone(b[i:end]))
		return end, true
	})
	return extra, ok
}

// unmarshalSlow is UnmarshalJSON through a map of every member: any
// input, and the reference dataExtras is tested against.
func (d *NodeData) unmarshalSlow(b []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	var a nodeDataAlias
	folded := false
	for k, v := range all {
		if knownDataFields[k] {
			continue
		}
		folded = folded || foldsToKnownField(k)
		if a.Extra == nil {
			a.Extra = make(map[string]json.RawMessage)
		}
		a.Extra[k] = v
	}
	known := b
	if folded {
		// encoding/json matches keys case-insensitively, so "Condition" or
		// "agentname" would fill a known field as well as land in Extra, and
		// a round trip would change the node. Decode the exact keys only.
		exact := make(map[string]json.RawMessage, len(knownDataFields))
		for k, v := range all {
			if knownDataFields[k] {
				exact[k] = v
			}
		}
		var err error
		if known, err = json.Marshal(exact); err != nil {
			return err
		}
	}
	extra := a.Extra
	if err := json.Unmarshal(known, &a); err != nil {
		return err
	}
	a.Extra = extra
	*d = NodeData(a)
	return nil
}

// foldsToKnownField reports whether encoding/json would decode key into a
// known field although it is not spelled exactly like one.
func foldsToKnownField(key string) bool {
	for k := range knownDataFields {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// MarshalJSON writes the known fields and then Extra.
func (d NodeData) MarshalJSON() ([]byte, error) {
	b, err := marshalNoEscape(nodeDataAlias(d))
	if err != nil || len(d.Extra) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range d.Extra {
		if _, known := m[k]; !known && !knownDataFields[k] {
			m[k] = v
		}
	}
	return marshalNoEscape(m) // map keys are sorted, so the output is deterministic
}

// marshalNoEscape is json.Marshal without HTML escaping: the caller's
// encoder decides about escaping (json.Marshal still escapes, Encode does
// not, so prompts with < and > stay readable in files).
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// Edge connects two nodes. An edge whose SourceHandle is "subagent" hands
// the target agent to the source agent as a tool; every other edge is an
// execution edge.
type Edge struct {
	ID           string `json:"id"`
	Source       string `json:"source"`
	Target       string `json:"target"`
	SourceHandle string `json:"sourceHandle,omitempty"`
	TargetHandle string `json:"targetHandle,omitempty"`
}

// IsSubagent reports whether e is a subagent (tool) edge.
func (e Edge) IsSubagent() bool { return e.SourceHandle == HandleSubagent }

// Label is how messages name a node: its id, and its agent name when it has one.
func (n Node) Label() string {
	if n.Data.AgentName != "" {
		return n.Type + " node \"" + n.ID + "\" (" + n.Data.AgentName + ")"
	}
	return n.Type + " node \"" + n.ID + "\""
}

// SubagentsEnabled reports whether an agent node may call subagents.
func (n Node) SubagentsEnabled() bool { return n.Data.Tools != nil && n.Data.Tools.Subagents }

// WebSearchEnabled reports whether an agent node has the web search tool.
func (n Node) WebSearchEnabled() bool { return n.Data.Tools != nil && n.Data.Tools.WebSearch }

// Severity of a validation problem.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Problem is one finding of Validate or Normalize. Code is a stable contract
// shown by the UI and the API.
type Problem struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	NodeID   string `json:"nodeId,omitempty"`
	EdgeID   string `json:"edgeId,omitempty"`
	// Field and Line locate a YAML workflow's problem: the dotted field
	// path inside the node or file, and the 1-based line (0: unknown).
	Field string `json:"field,omitempty"`
	Line  int    `json:"line,omitempty"`
}

// IsError reports whether p blocks a run.
func (p Problem) IsError() bool { return p.Severity == SeverityError }

// HasErrors reports whether any problem is an error.
func HasErrors(ps []Problem) bool {
	for _, p := range ps {
		if p.IsError() {
			return true
		}
	}
	return false
}
