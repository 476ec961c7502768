package graph

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Builders keep the validation table short.

func start(id string) Node { return Node{ID: id, Type: TypeStart, Data: NodeData{InitialInput: "go"}} }

func agent(id, name string) Node {
	return Node{ID: id, Type: TypeAgent, Data: NodeData{AgentName: name, UserPrompt: "{{PREVIOUS_OUTPUT}}"}}
}

// parent is an agent with the subagents tool on.
func parent(id, name string) Node {
	n := agent(id, name)
	n.Data.Tools = &Tools{Subagents: true}
	return n
}

func ifNode(id string, conds ...Condition) Node {
	return Node{ID: id, Type: TypeIf, Data: NodeData{Conditions: conds}}
}

func approval(id string) Node { return Node{ID: id, Type: TypeApproval, Data: NodeData{Prompt: "ok?"}} }

func exec(id, src, handle, dst string) Edge {
	return Edge{ID: id, Source: src, Target: dst, SourceHandle: handle, TargetHandle: HandleInput}
}

func sub(id, src, dst string) Edge {
	return Edge{ID: id, Source: src, Target: dst, SourceHandle: HandleSubagent}
}

func nodes(ns ...Node) []Node { return ns }

func withApprove(n Node, patterns ...string) Node {
	n.Data.Tools = &Tools{Builtin: []string{ToolBash, ToolWrite}, Approve: patterns}
	return n
}
func edges(es ...Edge) []Edge { return es }

// want is an expected problem: code, severity, node id, edge id.
type want struct{ code, severity, node, edge string }

func errorAt(code, node, edge string) want   { return want{code, SeverityError, node, edge} }
func warningAt(code, node, edge string) want { return want{code, SeverityWarning, node, edge} }

func TestValidateCodes(t *testing.T) {
	t.Parallel()
	yes := Condition{OpEqual, "yes"}
	tests := []struct {
		name    string
		g       Graph
		want    []want // every problem, in order
		message string // a substring one of the messages must have
	}{
		{
			name: "no_start",
			g:    Graph{Nodes: nodes(agent("a", "Alpha"))},
			want: []want{errorAt(CodeNoStart, "", "")},
		},
		{
			name: "no_start on an empty graph",
			g:    Graph{},
			want: []want{errorAt(CodeNoStart, "", "")},
		},
		{
			name: "multiple_start",
			g:    Graph{Nodes: nodes(start("s"), agent("a", "Alpha"), start("s2")), Edges: edges(exec("e1", "s", "output", "a"), exec("e2", "s2", "output", "a"))},
			want: []want{errorAt(CodeMultipleStart, "s2", "")},
		},
		{
			name: "duplicate_node_id",
			g:    Graph{Nodes: nodes(start("s"), agent("a", "Alpha"), agent("a", "Copy")), Edges: edges(exec("e1", "s", "output", "a"))},
			want: []want{errorAt(CodeDuplicateNodeID, "a", "")},
		},
		{
			name:    "empty_node_id",
			g:       Graph{Nodes: nodes(start("s"), agent("a", "Alpha"), agent("", "Nameless")), Edges: edges(exec("e1", "s", "output", "a"))},
			want:    []want{errorAt(CodeEmptyNodeID, "", "")},
			message: "node #3 (Nameless)",
		},
		{
			name:    "unknown_node_type",
			g:       Graph{Nodes: nodes(start("s"), Node{ID: "r", Type: "router"}), Edges: edges(exec("e1", "s", "output", "r"))},
			want:    []want{errorAt(CodeUnknownNodeType, "r", "")},
			message: `unknown type "router"`,
		},
		{
			name:    "unknown_node_type hints at normalizing a legacy type",
			g:       Graph{Nodes: nodes(start("s"), Node{ID: "q", Type: "input"}), Edges: edges(exec("e1", "s", "output", "q"))},
			want:    []want{errorAt(CodeUnknownNodeType, "q", "")},
			message: "normalize",
		},
		{
			name:    "missing_node",
			g:       Graph{Nodes: nodes(start("s"), agent("a", "Alpha")), Edges: edges(exec("e1", "s", "output", "a"), exec("e2", "a", "output", "ghost"))},
			want:    []want{errorAt(CodeMissingNode, "", "e2")},
			message: `target node "ghost"`,
		},
		{
			name: "invalid_handle: condition-2 on an if with two conditions",
			g: Graph{
				Nodes: nodes(start("s"), ifNode("c", yes, yes), agent("a", "Alpha")),
				Edges: edges(exec("e1", "s", "output", "c"), exec("e2", "c", "condition-1", "a"), exec("e3", "c", "condition-2", "a")),
			},
			want:    []want{errorAt(CodeInvalidHandle, "c", "e3")},
			message: "condition-0, condition-1, false",
		},
		{
			name: "invalid_handle: condition-01 is not canonical",
			g: Graph{
				Nodes: nodes(start("s"), ifNode("c", yes, yes), agent("a", "Alpha")),
				Edges: edges(exec("e1", "s", "output", "c"), exec("e2", "c", "false", "a"), exec("e3", "c", "condition-01", "a")),
			},
			want: []want{errorAt(CodeInvalidHandle, "c", "e3")},
		},
		{
			name: "invalid_tool_pattern: an approval pattern that does not parse",
			g: Graph{
				Nodes: nodes(start("s"), withApprove(agent("a", "Alpha"), "Write", "Bash(git push"), withApprove(agent("b", "Beta"), "Glob(*.go)")),
				Edges: edges(exec("e1", "s", "output", "a"), exec("e2", "a", "output", "b")),
			},
			want:    []want{errorAt(CodeInvalidToolPattern, "a", ""), errorAt(CodeInvalidToolPattern, "b", "")},
			message: `(Alpha): approve: invalid tool pattern "Bash(git push"`,
		},
		{
			name: "invalid_handle: approve on an agent",
			g: Graph{
				Nodes: nodes(start("s"), agent("a", "Alpha"), agent("b", "Beta")),
				Edges: edges(exec("e1", "s", "output", "a"), exec("e2", "a", "approve", "b")),
			},
			want:    []want{errorAt(CodeInvalidHandle, "a", "e2")},
			message: `"approve"`,
		},
		{
			name: "invalid_handle: output on an approval",
			g: Graph{
				Nodes: nodes(start("s"), approval("p"), agent("b", "Beta")),
				Edges: edges(exec("e1", "s", "output", "p"), exec("e2", "p", "reject", "b"), exec("e3", "p", "output", "b")),
			},
			want: []want{errorAt(CodeInvalidHandle, "p", "e3")},
		},
		{
			name: "invalid_handle: bad target handle on an execution edge",
			g: Graph{
				Nodes: nodes(start("s"), agent("a", "Alpha")),
				Edges: edges(Edge{ID: "e1", Source: "s", Target: "a", SourceHandle: "output", TargetHandle: "output"}),
			},
			want: []want{errorAt(CodeInvalidHandle, "a", "e1")},
		},
		{
			name: "unknown_operator",
			g: Graph{
				Nodes: nodes(start("s"), ifNode("c", Condition{"gt", "3"}), agent("a", "Alpha")),
				Edges: edges(exec("e1", "s", "output", "c"), exec("e2", "c", "condition-0", "a")),
			},
			want:    []want{errorAt(CodeUnknownOperator, "c", "")},
			message: `"gt"`,
		},
		{
			name: "subagent_source_not_agent",
			g: Graph{
				Nodes: nodes(start("s"), approval("p"), agent("a", "Alpha"), agent("b", "Beta")),
				Edges: edges(exec("e1", "s", "output", "p"), exec("e2", "p", "approve", "a"), sub("e3", "p", "b")),
			},
			want: []want{errorAt(CodeSubagentSourceNotAgent, "p", "e3")},
		},
		{
			name: "subagent_target_not_agent",
			g: Graph{
				Nodes: nodes(start("s"), parent("a", "Alpha"), approval("p")),
				Edges: edges(exec("e1", "s", "output", "a"), sub("e2", "a", "p")),
			},
			// p counts as reachable through its parent, so its missing branches show too.
			want: []want{errorAt(CodeSubagentTargetNotAgent, "p", "e2"), warningAt(CodeApprovalNoBranch, "p", "")},
		},
		{
			name: "subagent_tool_disabled",
			g: Graph{
				Nodes: nodes(start("s"), agent("a", "Alpha"), agent("b", "Beta")),
				Edges: edges(exec("e1", "s", "output", "a"), sub("e2", "a", "b")),
			},
			want: []want{errorAt(CodeSubagentToolDisabled, "a", "e2")},
		},
		{
			name: "subagent_target_handle",
			g: Graph{
				Nodes: nodes(start("s"), parent("a", "Alpha"), agent("b", "Beta")),
				Edges: edges(exec("e1", "s", "output", "a"), Edge{ID: "e2", Source: "a", Target: "b", SourceHandle: "subagent", TargetHandle: "output"}),
			},
			want: []want{errorAt(CodeSubagentTargetHandle, "b", "e2")},
		},
		{
			name: "subagent_self",
			g: Graph{
				Nodes: nodes(start("s"), parent("a", "Alpha")),
				Edges: edges(exec("e1", "s", "output", "a"), sub("e2", "a", "a")),
			},
			want: []want{errorAt(CodeSubagentSelf, "a", "e2")},
		},
		{
			name: "subagent_cycle",
			g: Graph{
				Nodes: nodes(start("s"), parent("top", "Top"), parent("a", "Alpha"), parent("b", "Beta")),
				Edges: edges(exec("e1", "s", "output", "top"), sub("e2", "top", "a"), sub("e3", "a", "b"), sub("e4", "b", "a")),
			},
			want: []want{
				errorAt(CodeSubagentMultipleParents, "a", "e4"),
				errorAt(CodeSubagentCycle, "a", "e4"),
			},
			message: "a -> b -> a",
		},
		{
			name: "subagent_cycle unreachable from start",
			g: Graph{
				Nodes: nodes(start("s"), agent("x", "X"), parent("a", "Alpha"), parent("b", "Beta"), parent("c", "Gamma")),
				Edges: edges(exec("e1", "s", "output", "x"), sub("e2", "a", "b"), sub("e3", "b", "c"), sub("e4", "c", "a")),
			},
			want: []want{
				errorAt(CodeSubagentCycle, "a", "e4"),
				warningAt(CodeUnreachableNode, "a", ""),
				warningAt(CodeUnreachableNode, "b", ""),
				warningAt(CodeUnreachableNode, "c", ""),
			},
			message: "a -> b -> c -> a",
		},
		{
			name: "subagent_multiple_parents",
			g: Graph{
				Nodes: nodes(start("s"), parent("a", "Alpha"), parent("b", "Beta"), agent("c", "Gamma")),
				Edges: edges(exec("e1", "s", "output", "a"), exec("e2", "a", "output", "b"), sub("e3", "a", "c"), sub("e4", "b", "c")),
			},
			want:    []want{errorAt(CodeSubagentMultipleParents, "c", "e4")},
			message: "Alpha",
		},
		{
			name: "subagent_in_execution",
			g: Graph{
				Nodes: nodes(start("s"), parent("a", "Alpha"), agent("b", "Beta"), agent("c", "Gamma")),
				Edges: edges(exec("e1", "s", "output", "a"), sub("e2", "a", "b"), exec("e3", "b", "output", "c")),
			},
			want: []want{errorAt(CodeSubagentInExecution, "b", "")},
		},
		{
			name: "start_no_outgoing",
			g:    Graph{Nodes: nodes(start("s"), agent("a", "Alpha"))},
			want: []want{errorAt(CodeStartNoOutgoing, "s", ""), warningAt(CodeUnreachableNode, "a", "")},
		},
		{
			name: "nothing_reachable: the start node loops to itself",
			g:    Graph{Nodes: nodes(start("s"), agent("a", "Alpha")), Edges: edges(exec("e1", "s", "output", "s"))},
			want: []want{
				warningAt(CodeEdgeIntoStart, "s", "e1"),
				errorAt(CodeNothingReachable, "s", ""),
				warningAt(CodeUnreachableNode, "a", ""),
			},
		},
		{
			name: "nothing_reachable: the start node points at a missing node",
			g:    Graph{Nodes: nodes(start("s")), Edges: edges(exec("e1", "s", "output", "ghost"))},
			want: []want{errorAt(CodeMissingNode, "", "e1"), errorAt(CodeNothingReachable, "s", "")},
		},
		{
			name: "if_no_branch",
			g: Graph{
				Nodes: nodes(start("s"), ifNode("c", yes)),
				Edges: edges(exec("e1", "s", "output", "c")),
			},
			want: []want{errorAt(CodeIfNoBranch, "c", "")},
		},
		{
			name: "if_no_branch: an invalid handle is no branch",
			g: Graph{
				Nodes: nodes(start("s"), ifNode("c", yes), agent("a", "Alpha")),
				Edges: edges(exec("e1", "s", "output", "c"), exec("e2", "c", "true", "a")),
			},
			want: []want{errorAt(CodeInvalidHandle, "c", "e2"), errorAt(CodeIfNoBranch, "c", "")},
		},
		{
			name: "approval_no_branch",
			g: Graph{
				Nodes: nodes(start("s"), agent("a", "Alpha"), approval("p")),
				Edges: edges(exec("e1", "s", "output", "a"), exec("e2", "a", "output", "p")),
			},
			want: []want{warningAt(CodeApprovalNoBranch, "p", "")}, // a final sign-off
		},
		{
			name: "unreachable_node",
			g: Graph{
				Nodes: nodes(start("s"), agent("a", "Alpha"), agent("b", "Beta"), ifNode("c", yes)),
				Edges: edges(exec("e1", "s", "output", "a"), exec("e2", "b", "output", "a")),
			},
			// c has no branch, but it never runs: only reachable nodes need one.
			want: []want{warningAt(CodeUnreachableNode, "b", ""), warningAt(CodeUnreachableNode, "c", "")},
		},
		{
			name: "empty_condition",
			g: Graph{
				Nodes: nodes(start("s"), ifNode("c", yes, Condition{OpContains, "  "}), agent("a", "Alpha")),
				Edges: edges(exec("e1", "s", "output", "c"), exec("e2", "c", "false", "a")),
			},
			want: []want{warningAt(CodeEmptyCondition, "c", "")},
		},
		{
			name: "if_no_conditions",
			g: Graph{
				Nodes: nodes(start("s"), ifNode("c"), agent("a", "Alpha")),
				Edges: edges(exec("e1", "s", "output", "c"), exec("e2", "c", "false", "a")),
			},
			want: []want{warningAt(CodeIfNoConditions, "c", "")},
		},
		{
			name: "duplicate_edge",
			g: Graph{
				Nodes: nodes(start("s"), agent("a", "Alpha")),
				Edges: edges(exec("e1", "s", "output", "a"), Edge{ID: "e2", Source: "s", Target: "a"}),
			},
			want: []want{warningAt(CodeDuplicateEdge, "s", "e2")},
		},
		{
			name: "duplicate_edge_id",
			g: Graph{
				Nodes: nodes(start("s"), agent("a", "Alpha"), agent("b", "Beta")),
				Edges: edges(exec("e1", "s", "output", "a"), exec("e1", "a", "output", "b")),
			},
			want: []want{warningAt(CodeDuplicateEdgeID, "a", "e1")},
		},
		{
			name: "edge_into_start",
			g: Graph{
				Nodes: nodes(start("s"), agent("a", "Alpha")),
				Edges: edges(exec("e1", "s", "output", "a"), exec("e2", "a", "output", "s")),
			},
			want: []want{warningAt(CodeEdgeIntoStart, "s", "e2")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := Validate(&tt.g)
			got := make([]want, len(ps))
			for i, p := range ps {
				got[i] = want{p.Code, p.Severity, p.NodeID, p.EdgeID}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("problems:\n got %s\nwant %v", formatProblems(ps), tt.want)
			}
			for _, p := range ps {
				assertMessageNames(t, &tt.g, p)
			}
			if tt.message != "" && !slices.ContainsFunc(ps, func(p Problem) bool { return strings.Contains(p.Message, tt.message) }) {
				t.Errorf("no message contains %q:\n%s", tt.message, formatProblems(ps))
			}
			if !reflect.DeepEqual(ps, Validate(&tt.g)) {
				t.Errorf("Validate is not deterministic")
			}
		})
	}
}

// assertMessageNames checks that a message names its node (with the agent
// name where it has one) and its edge.
func assertMessageNames(t *testing.T, g *Graph, p Problem) {
	t.Helper()
	if p.Message == "" {
		t.Errorf("%s: empty message", p.Code)
	}
	if p.NodeID != "" {
		if !strings.Contains(p.Message, strconv.Quote(p.NodeID)) {
			t.Errorf("%s: message %q does not name node %q", p.Code, p.Message, p.NodeID)
		}
		if n := g.NodeByID(p.NodeID); n != nil && n.Data.AgentName != "" &&
			!strings.Contains(p.Message, n.Data.AgentName) {
			t.Errorf("%s: message %q does not name agent %q", p.Code, p.Message, n.Data.AgentName)
		}
	}
	if p.EdgeID != "" && !strings.Contains(p.Message, strconv.Quote(p.EdgeID)) {
		t.Errorf("%s: message %q does not name edge %q", p.Code, p.Message, p.EdgeID)
	}
}

func TestValidateAllowed(t *testing.T) {
	t.Parallel()
	yes := Condition{OpEqual, "yes"}
	tests := []struct {
		name string
		g    Graph
	}{
		{
			name: "revise loop through an approval",
			g: Graph{
				Nodes: nodes(start("s"), agent("w", "Writer"), approval("p"), agent("pub", "Publisher")),
				Edges: edges(exec("e1", "s", "output", "w"), exec("e2", "w", "output", "p"),
					exec("e3", "p", "reject", "w"), exec("e4", "p", "approve", "pub")),
			},
		},
		{
			name: "loop through an if node with only a condition branch",
			g: Graph{
				Nodes: nodes(start("s"), agent("w", "Writer"), ifNode("c", yes, Condition{OpContains, "again"})),
				Edges: edges(exec("e1", "s", "output", "w"), exec("e2", "w", "output", "c"), exec("e3", "c", "condition-1", "w")),
			},
		},
		{
			name: "if with only false and approval with only reject",
			g: Graph{
				Nodes: nodes(start("s"), ifNode("c", yes), approval("p"), agent("a", "Alpha")),
				Edges: edges(exec("e1", "s", "output", "c"), exec("e2", "c", "false", "p"), exec("e3", "p", "reject", "a")),
			},
		},
		{
			name: "nested acyclic subagent chain, and subagents enabled without subagents",
			g: Graph{
				Nodes: nodes(start("s"), parent("lead", "Lead"), parent("mid", "Mid"), parent("leaf", "Leaf"), parent("solo", "Solo")),
				Edges: edges(exec("e1", "s", "output", "lead"), sub("e2", "lead", "mid"), sub("e3", "mid", "leaf"),
					exec("e4", "lead", "output", "solo")),
			},
		},
		{
			name: "empty handles and operators read as their defaults",
			g: Graph{
				Nodes: nodes(start("s"), ifNode("c", Condition{"", "x"}), agent("a", "Alpha")),
				Edges: edges(Edge{ID: "e1", Source: "s", Target: "c"}, Edge{ID: "e2", Source: "c", Target: "a", SourceHandle: "condition-0"}),
			},
		},
		{
			name: "subagent edge with input target handle",
			g: Graph{
				Nodes: nodes(start("s"), parent("a", "Alpha"), agent("b", "Beta")),
				Edges: edges(exec("e1", "s", "output", "a"), Edge{ID: "e2", Source: "a", Target: "b", SourceHandle: "subagent", TargetHandle: "input"}),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ps := Validate(&tt.g); len(ps) != 0 {
				t.Errorf("want no problems, got:\n%s", formatProblems(ps))
			}
		})
	}
}

// TestValidateReportsEverything checks that one call returns all problems,
// in node order then edge order.
func TestValidateReportsEverything(t *testing.T) {
	t.Parallel()
	g := Graph{
		Nodes: nodes(start("s"), Node{ID: "x", Type: "mystery"}, start("s2"), ifNode("c", Condition{"like", ""})),
		Edges: edges(exec("e1", "s", "output", "c"), exec("e2", "c", "condition-5", "x"), exec("e3", "c", "output", "nowhere")),
	}
	ps := Validate(&g)
	want := []string{
		CodeUnknownNodeType, CodeMultipleStart, CodeUnknownOperator, CodeEmptyCondition,
		CodeInvalidHandle, CodeMissingNode,
		CodeStartNoOutgoing, CodeIfNoBranch,
	}
	if got := problemCodes(ps); !slices.Equal(got, want) {
		t.Errorf("codes:\n got %v\nwant %v\n%s", got, want, formatProblems(ps))
	}
}

func TestNodeHandles(t *testing.T) {
	t.Parallel()
	c := ifNode("c", Condition{OpEqual, "a"}, Condition{OpEqual, "b"})
	if got := c.SourceHandles(); !slices.Equal(got, []string{"condition-0", "condition-1", "false"}) {
		t.Errorf("SourceHandles = %v", got)
	}
	for h, ok := range map[string]bool{"condition-0": true, "condition-1": true, "false": true, "condition-2": false,
		"condition--1": false, "condition-": false, "condition-+1": false, "output": false, "true": false} {
		if c.HasSourceHandle(h) != ok {
			t.Errorf("if.HasSourceHandle(%q) = %v, want %v", h, !ok, ok)
		}
	}
}

func formatProblems(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %s %s node=%q edge=%q: %s\n", p.Severity, p.Code, p.NodeID, p.EdgeID, p.Message)
	}
	return b.String()
}
