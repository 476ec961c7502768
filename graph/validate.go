package graph

import (
	"fmt"
	"strconv"
	"strings"
)

// Validation codes. They are a contract with the UI, the API and the CLI.
const (
	// Errors: the graph cannot run.
	CodeNoStart                 = "no_start"
	CodeMultipleStart           = "multiple_start"
	CodeDuplicateNodeID         = "duplicate_node_id"
	CodeEmptyNodeID             = "empty_node_id"
	CodeUnknownNodeType         = "unknown_node_type"
	CodeMissingNode             = "missing_node"
	CodeInvalidHandle           = "invalid_handle"
	CodeUnknownOperator         = "unknown_operator"
	CodeSubagentSourceNotAgent  = "subagent_source_not_agent"
	CodeSubagentTargetNotAgent  = "subagent_target_not_agent"
	CodeSubagentToolDisabled    = "subagent_tool_disabled"
	CodeSubagentTargetHandle    = "subagent_target_handle"
	CodeSubagentSelf            = "subagent_self"
	CodeSubagentCycle           = "subagent_cycle"
	CodeSubagentMultipleParents = "subagent_multiple_parents"
	CodeSubagentInExecution     = "subagent_in_execution"
	CodeStartNoOutgoing         = "start_no_outgoing"
	CodeNothingReachable        = "nothing_reachable"
	CodeIfNoBranch              = "if_no_branch"
	CodeApprovalNoBranch        = "approval_no_branch"
	CodeInvalidToolPattern      = "invalid_tool_pattern"

	// Warnings: the graph runs, but probably not as meant.
	CodeUnreachableNode = "unreachable_node"
	CodeEmptyCondition  = "empty_condition"
	CodeDuplicateEdge   = "duplicate_edge"
	CodeDuplicateEdgeID = "duplicate_edge_id"
	CodeEdgeIntoStart   = "edge_into_start"
	CodeIfNoConditions  = "if_no_conditions"
)

// NodeByID returns the first node with the given id, or nil.
func (g *Graph) NodeByID(id string) *Node {
	for i := range g.Nodes {
		if g.Nodes[i].ID == id {
			return &g.Nodes[i]
		}
	}
	return nil
}

// KnownType reports whether t is one of the four node types.
func KnownType(t string) bool {
	switch t {
	case TypeStart, TypeAgent, TypeIf, TypeApproval:
		return true
	}
	return false
}

// SourceHandles lists the handles an edge may leave n through, in the order
// the editor draws them.
func (n Node) SourceHandles() []string {
	switch n.Type {
	case TypeStart:
		return []string{HandleOutput}
	case TypeAgent:
		return []string{HandleOutput, HandleSubagent}
	case TypeIf:
		hs := make([]string, 0, len(n.Data.Conditions)+1)
		for i := range n.Data.Conditions {
			hs = append(hs, HandleConditionPrefix+strconv.Itoa(i))
		}
		return append(hs, HandleFalse)
	case TypeApproval:
		return []string{HandleApprove, HandleReject}
	}
	return nil
}

// HasSourceHandle reports whether an edge may leave n through handle h. The
// empty handle means "output", as Normalize writes it.
func (n Node) HasSourceHandle(h string) bool {
	switch n.Type {
	case TypeStart:
		return h == HandleOutput || h == ""
	case TypeAgent:
		return h == HandleOutput || h == "" || h == HandleSubagent
	case TypeIf:
		if h == HandleFalse {
			return true
		}
		i, ok := ConditionIndex(h)
		return ok && i < len(n.Data.Conditions)
	case TypeApproval:
		return h == HandleApprove || h == HandleReject
	}
	return false
}

// ConditionIndex parses a "condition-<i>" handle. Only the canonical form
// counts: "condition-01" and "condition--1" are not condition handles.
func ConditionIndex(h string) (int, bool) {
	s, ok := strings.CutPrefix(h, HandleConditionPrefix)
	if !ok || s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || strconv.Itoa(i) != s {
		return 0, false
	}
	return i, true
}

// Validate returns every problem of g at once: node checks in node order,
// then edge checks in edge order, then graph-wide checks in node order. It
// works in one pass over nodes and edges plus a traversal, linear in their
// number. Validate expects a normalized graph (Decode normalizes), but
// reads an empty source handle as "output" and an empty operator as
// "equal", as Normalize would write them.
func Validate(g *Graph) []Problem {
	v := validator{g: g}
	v.nodes()
	v.edges()
	v.graph()
	return CapProblems(v.problems)
}

type validator struct {
	g        *Graph
	problems []Problem
	index    map[string]int32 // node id -> index of the first node with it
	starts   []int32

	// per node, by index
	execOut   []int32 // execution edges leaving the node, whatever their target
	hasExec   []bool  // has an execution edge in or out
	hasBranch []bool  // if/approval: has an edge on a valid branch handle
	subParent []int32 // first subagent parent, -1 for none

	// edges kept for traversal (both ends exist), with their index in g.Edges
	src, dst, edge []int32
	sub            []bool
}

func (v *validator) add(code, severity, nodeID, edgeID, format string, args ...any) {
	v.problems = append(v.problems, Problem{
		Code: code, Severity: severity, NodeID: nodeID, EdgeID: edgeID,
		Message: fmt.Sprintf(format, args...),
	})
}

// name labels the node with the given id, or just quotes the id when there
// is no such node.
func (v *validator) name(id string) string {
	if i, ok := v.index[id]; ok {
		return v.g.Nodes[i].Label()
	}
	return fmt.Sprintf("node %q", id)
}

func (v *validator) nodes() {
	g := v.g
	v.index = make(map[string]int32, len(g.Nodes))
	for i := range g.Nodes {
		n := &g.Nodes[i]
		switch first, dup := v.index[n.ID]; {
		case n.ID == "":
			name := ""
			if n.Data.AgentName != "" {
				name = " (" + n.Data.AgentName + ")"
			}
			v.add(CodeEmptyNodeID, SeverityError, "", "",
				"%s node #%d%s has an empty id; every node needs a unique id", n.Type, i+1, name)
		case dup:
			v.add(CodeDuplicateNodeID, SeverityError, n.ID, "",
				"%s (node #%d) reuses the id of %s (node #%d); node ids must be unique",
				n.Label(), i+1, g.Nodes[first].Label(), first+1)
		default:
			v.index[n.ID] = int32(i)
		}

		switch n.Type {
		case TypeStart:
			if len(v.starts) > 0 {
				v.add(CodeMultipleStart, SeverityError, n.ID, "",
					"%s is a second start node (the first is %s); a graph has exactly one",
					n.Label(), g.Nodes[v.starts[0]].Label())
			}
			v.starts = append(v.starts, int32(i))
		case TypeAgent:
			v.toolPatterns(n)
		case TypeApproval:
		case TypeIf:
			v.conditions(n)
		default:
			hint := ""
			switch n.Type {
			case legacyTypeInput, legacyTypeEnd:
				hint = " (a legacy type: normalize the graph first)"
			}
			v.add(CodeUnknownNodeType, SeverityError, n.ID, "",
				"node %q has unknown type %q%s; want start, agent, if or approval", n.ID, n.Type, hint)
		}
	}
	if len(v.starts) == 0 {
		v.add(CodeNoStart, SeverityError, "", "", "the graph has no start node")
	}
}

// toolPatterns checks an agent's approval patterns: one that does not
// parse would never ask, and the calls it names would run unasked.
func (v *validator) toolPatterns(n *Node) {
	if n.Data.Tools == nil {
		return
	}
	for _, s := range n.Data.Tools.Approve {
		if _, err := ParseToolPattern(s); err != nil {
			v.add(CodeInvalidToolPattern, SeverityError, n.ID, "", "%s: approve: %v", n.Label(), err)
		}
	}
}

func (v *validator) conditions(n *Node) {
	if len(n.Data.Conditions) == 0 {
		v.add(CodeIfNoConditions, SeverityWarning, n.ID, "",
			"%s has no conditions, so it always takes the false branch", n.Label())
		return
	}
	for i, c := range n.Data.Conditions {
		switch c.Operator {
		case OpEqual, OpContains, "":
		default:
			v.add(CodeUnknownOperator, SeverityError, n.ID, "",
				"%s: condition %d (handle condition-%d) has unknown operator %q; want equal or contains", n.Label(), i+1, i, c.Operator)
		}
		if strings.TrimSpace(c.Value) == "" {
			v.add(CodeEmptyCondition, SeverityWarning, n.ID, "",
				"%s: condition %d (handle condition-%d) has a blank value and never matches", n.Label(), i+1, i)
		}
	}
}

// edgeKey identifies an edge by what it connects, with empty handles read
// as their defaults.
type edgeKey struct {
	source, sourceHandle, target, targetHandle string
}

func (v *validator) edges() {
	g := v.g
	nn := len(g.Nodes)
	v.execOut = make([]int32, nn)
	v.hasExec = make([]bool, nn)
	v.hasBranch = make([]bool, nn)
	v.subParent = make([]int32, nn)
	for i := range v.subParent {
		v.subParent[i] = -1
	}
	v.src = make([]int32, 0, len(g.Edges))
	v.dst = make([]int32, 0, len(g.Edges))
	v.edge = make([]int32, 0, len(g.Edges))
	v.sub = make([]bool, 0, len(g.Edges))
	ids := make(map[string]int, len(g.Edges))
	seen := make(map[edgeKey]int, len(g.Edges))

	for j := range g.Edges {
		e := &g.Edges[j]
		if e.ID != "" {
			if first, dup := ids[e.ID]; dup {
				v.add(CodeDuplicateEdgeID, SeverityWarning, e.Source, e.ID,
					"edge %q (edge #%d, from %s to %s) reuses the id of edge #%d; edge ids should be unique",
					e.ID, j+1, v.name(e.Source), v.name(e.Target), first+1)
			} else {
				ids[e.ID] = j
			}
		}
		key := edgeKey{e.Source, e.SourceHandle, e.Target, e.TargetHandle}
		if key.sourceHandle == "" {
			key.sourceHandle = HandleOutput
		}
		if key.targetHandle == "" {
			key.targetHandle = HandleInput
		}
		if first, dup := seen[key]; dup {
			v.add(CodeDuplicateEdge, SeverityWarning, e.Source, e.ID,
				"edge %q repeats edge %q from %s through %q to %s; the copy is ignored",
				e.ID, g.Edges[first].ID, v.name(e.Source), key.sourceHandle, v.name(e.Target))
			continue
		}
		seen[key] = j

		si, sok := v.index[e.Source]
		ti, tok := v.index[e.Target]
		if !e.IsSubagent() && sok {
			v.execOut[si]++
		}
		if !sok || !tok {
			var missing []string
			if !sok {
				missing = append(missing, fmt.Sprintf("source node %q", e.Source))
			}
			if !tok {
				missing = append(missing, fmt.Sprintf("target node %q", e.Target))
			}
			v.add(CodeMissingNode, SeverityError, "", e.ID,
				"edge %q (%s -> %s) names %s, which does not exist", e.ID, e.Source, e.Target,
				strings.Join(missing, " and "))
			continue
		}
		if e.IsSubagent() {
			if !v.subagentEdge(e, si, ti) {
				continue
			}
		} else {
			v.executionEdge(e, si, ti)
		}
		v.src = append(v.src, si)
		v.dst = append(v.dst, ti)
		v.edge = append(v.edge, int32(j))
		v.sub = append(v.sub, e.IsSubagent())
	}
}

// subagentEdge checks a subagent edge and reports whether it joins the
// subagent tree.
func (v *validator) subagentEdge(e *Edge, si, ti int32) bool {
	s, t := &v.g.Nodes[si], &v.g.Nodes[ti]
	switch {
	case s.Type != TypeAgent:
		v.add(CodeSubagentSourceNotAgent, SeverityError, s.ID, e.ID,
			"subagent edge %q leaves %s; only agent nodes have subagents", e.ID, s.Label())
	case !s.SubagentsEnabled():
		v.add(CodeSubagentToolDisabled, SeverityError, s.ID, e.ID,
			"subagent edge %q leaves %s, which does not have the subagents tool enabled", e.ID, s.Label())
	}
	if t.Type != TypeAgent {
		v.add(CodeSubagentTargetNotAgent, SeverityError, t.ID, e.ID,
			"subagent edge %q goes to %s; only agent nodes can be subagents", e.ID, t.Label())
	}
	if e.TargetHandle != "" && e.TargetHandle != HandleInput {
		v.add(CodeSubagentTargetHandle, SeverityError, t.ID, e.ID,
			"subagent edge %q enters %s through handle %q; want input", e.ID, t.Label(), e.TargetHandle)
	}
	if si == ti {
		v.add(CodeSubagentSelf, SeverityError, s.ID, e.ID,
			"subagent edge %q makes %s its own subagent", e.ID, s.Label())
		return false
	}
	switch p := v.subParent[ti]; {
	case p < 0:
		v.subParent[ti] = si
	case p != si:
		v.add(CodeSubagentMultipleParents, SeverityError, t.ID, e.ID,
			"%s is a subagent of both %s and %s (edge %q); a subagent has one parent",
			t.Label(), v.g.Nodes[p].Label(), s.Label(), e.ID)
	}
	return true
}

func (v *validator) executionEdge(e *Edge, si, ti int32) {
	s, t := &v.g.Nodes[si], &v.g.Nodes[ti]
	switch {
	case s.HasSourceHandle(e.SourceHandle):
		v.hasBranch[si] = true
	case KnownType(s.Type): // unknown types are reported once, on the node
		v.add(CodeInvalidHandle, SeverityError, s.ID, e.ID,
			"edge %q leaves %s through handle %q, which it does not have (it has %s)",
			e.ID, s.Label(), e.SourceHandle, strings.Join(s.SourceHandles(), ", "))
	}
	if e.TargetHandle != "" && e.TargetHandle != HandleInput {
		v.add(CodeInvalidHandle, SeverityError, t.ID, e.ID,
			"edge %q enters %s through handle %q; want input", e.ID, t.Label(), e.TargetHandle)
	}
	if t.Type == TypeStart {
		v.add(CodeEdgeIntoStart, SeverityWarning, t.ID, e.ID,
			"edge %q goes into %s; the start node only runs once, at the beginning", e.ID, t.Label())
	}
	v.hasExec[si] = true
	v.hasExec[ti] = true
}

func (v *validator) graph() {
	g := v.g
	nn := len(g.Nodes)
	// Adjacency in compressed rows: off[i]..off[i+1] indexes the kept edges
	// leaving node i, in edge order.
	off := make([]int32, nn+1)
	for _, s := range v.src {
		off[s+1]++
	}
	for i := range nn {
		off[i+1] += off[i]
	}
	adj := make([]int32, len(v.src))
	fill := make([]int32, nn)
	copy(fill, off[:nn])
	for k, s := range v.src {
		adj[fill[s]] = int32(k)
		fill[s]++
	}

	v.subagentCycles(off, adj)

	// Reachability from the start nodes along execution edges; subagent
	// edges carry it too, since a subagent runs when its parent does.
	reached := make([]bool, nn)
	queue := make([]int32, 0, nn)
	for _, s := range v.starts {
		if !reached[s] {
			reached[s] = true
			queue = append(queue, s)
		}
	}
	reachedOther := false
	for q := 0; q < len(queue); q++ {
		for _, k := range adj[off[queue[q]]:off[queue[q]+1]] {
			if t := v.dst[k]; !reached[t] {
				reached[t] = true
				queue = append(queue, t)
				reachedOther = reachedOther || g.Nodes[t].Type != TypeStart
			}
		}
	}

	anyOutgoing := false
	for _, s := range v.starts {
		anyOutgoing = anyOutgoing || v.execOut[s] > 0
	}
	if anyOutgoing && !reachedOther {
		v.add(CodeNothingReachable, SeverityError, g.Nodes[v.starts[0]].ID, "",
			"nothing runs after %s: its edges lead to no other existing node", g.Nodes[v.starts[0]].Label())
	}

	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.ID == "" || v.index[n.ID] != int32(i) {
			continue // reported already; edges never reach it
		}
		switch n.Type {
		case TypeStart:
			if v.execOut[i] == 0 {
				v.add(CodeStartNoOutgoing, SeverityError, n.ID, "",
					"%s has no outgoing edge, so nothing would run", n.Label())
			}
		case TypeIf:
			if reached[i] && !v.hasBranch[i] {
				v.add(CodeIfNoBranch, SeverityError, n.ID, "",
					"%s has no outgoing edge on a condition or the false branch", n.Label())
			}
		case TypeApproval:
			// A final sign-off: approving or rejecting it ends that branch,
			// which is allowed but may be a forgotten edge.
			if reached[i] && !v.hasBranch[i] {
				v.add(CodeApprovalNoBranch, SeverityWarning, n.ID, "",
					"%s has no outgoing approve or reject edge: it is a final sign-off and the branch ends after it", n.Label())
			}
		}
		if p := v.subParent[i]; p >= 0 && v.hasExec[i] {
			v.add(CodeSubagentInExecution, SeverityError, n.ID, "",
				"%s is a subagent of %s and also has execution edges; a subagent only runs as a tool",
				n.Label(), g.Nodes[p].Label())
		}
		if !reached[i] && n.Type != TypeStart && len(v.starts) > 0 {
			v.add(CodeUnreachableNode, SeverityWarning, n.ID, "",
				"%s cannot be reached from the start node and will never run", n.Label())
		}
	}
}

// subagentCycles reports every cycle of subagent edges, one per edge that
// closes it, with a depth-first search in node order.
func (v *validator) subagentCycles(off, adj []int32) {
	const (
		white = iota
		grey
		black
	)
	g := v.g
	nn := len(g.Nodes)
	color := make([]uint8, nn)
	depth := make([]int32, nn) // position on the stack while grey
	type frame struct{ node, next int32 }
	var stack []frame
	for root := range nn {
		if color[root] != white {
			continue
		}
		color[root] = grey
		depth[root] = 0
		stack = append(stack[:0], frame{int32(root), off[root]})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == off[top.node+1] {
				color[top.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			k := adj[top.next]
			top.next++
			if !v.sub[k] {
				continue
			}
			switch t := v.dst[k]; color[t] {
			case white:
				color[t] = grey
				depth[t] = int32(len(stack))
				stack = append(stack, frame{t, off[t]})
			case grey:
				path := make([]string, 0, len(stack)-int(depth[t])+1)
				for _, f := range stack[depth[t]:] {
					path = append(path, g.Nodes[f.node].ID)
				}
				path = append(path, g.Nodes[t].ID)
				e := g.Edges[v.edge[k]]
				v.add(CodeSubagentCycle, SeverityError, g.Nodes[t].ID, e.ID,
					"%s is its own subagent through the cycle %s (closed by edge %q)",
					g.Nodes[t].Label(), strings.Join(path, " -> "), e.ID)
			}
		}
	}
}
