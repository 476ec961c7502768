package graph

import (
	"fmt"
	"strconv"
)

// Legacy node types and handles that Normalize rewrites.
const (
	legacyTypeInput  = "input"
	legacyTypeEnd    = "end"
	legacyHandleTrue = "true"
)

// Normalization warning codes.
const (
	CodeLegacyEndRemoved       = "legacy_end_removed"
	CodeLegacyConditionDropped = "legacy_condition_dropped"
)

// Normalize rewrites g in place into the current shape and returns warnings
// for what it had to drop. It is idempotent: a normalized graph comes back
// unchanged and without warnings. Extra node data is never touched.
//
// Rules: legacy "end" nodes and the edges touching them are removed; node
// type "input" becomes "approval"; an if node's legacy "condition" string
// becomes conditions [{contains, condition}]; a condition without operator
// gets "equal"; handle "true" out of an if node becomes "condition-0"; an
// edge without source handle gets "output"; an edge without id gets
// "e-<source>-<sourceHandle>-<target>" (with "-2", "-3", ... on collision).
func Normalize(g *Graph) []Problem {
	var problems []Problem
	if g.Nodes == nil {
		g.Nodes = []Node{}
	}
	if g.Edges == nil {
		g.Edges = []Edge{}
	}
	problems = removeEndNodes(g, problems)

	// The first node with an id decides what edges see, as in Validate.
	types := make(map[string]string, len(g.Nodes))
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Type == legacyTypeInput {
			n.Type = TypeApproval
		}
		if n.Type == TypeIf && n.Data.Condition != "" {
			if len(n.Data.Conditions) == 0 {
				n.Data.Conditions = []Condition{{Operator: OpContains, Value: n.Data.Condition}}
			} else {
				problems = append(problems, Problem{
					Code: CodeLegacyConditionDropped, Severity: SeverityWarning, NodeID: n.ID,
					Message: fmt.Sprintf("%s has both a legacy condition %q and conditions; the legacy condition was dropped",
						n.Label(), n.Data.Condition),
				})
			}
			n.Data.Condition = ""
		}
		for j := range n.Data.Conditions {
			if n.Data.Conditions[j].Operator == "" {
				n.Data.Conditions[j].Operator = OpEqual
			}
		}
		if _, seen := types[n.ID]; !seen {
			types[n.ID] = n.Type
		}
	}

	taken := make(map[string]bool, len(g.Edges))
	missingID := false
	for i := range g.Edges {
		e := &g.Edges[i]
		switch {
		case e.SourceHandle == "":
			e.SourceHandle = HandleOutput
		case e.SourceHandle == legacyHandleTrue && types[e.Source] == TypeIf:
			e.SourceHandle = HandleConditionPrefix + "0"
		}
		if e.ID == "" {
			missingID = true
		} else {
			taken[e.ID] = true
		}
	}
	if missingID {
		for i := range g.Edges {
			e := &g.Edges[i]
			if e.ID != "" {
				continue
			}
			base := "e-" + e.Source + "-" + e.SourceHandle + "-" + e.Target
			id := base
			for k := 2; taken[id]; k++ {
				id = base + "-" + strconv.Itoa(k)
			}
			e.ID = id
			taken[id] = true
		}
	}
	return problems
}

// removeEndNodes drops legacy end nodes and every edge touching them. The
// engine finishes a branch when it has no outgoing edge, so an end node adds
// nothing.
func removeEndNodes(g *Graph, problems []Problem) []Problem {
	var ends map[string]int // end node id -> edges removed
	for _, n := range g.Nodes {
		if n.Type == legacyTypeEnd {
			if ends == nil {
				ends = make(map[string]int)
			}
			ends[n.ID] = 0
		}
	}
	if ends == nil {
		return problems
	}
	// An id shared with a real node keeps its edges: they may be the real
	// node's (Validate reports the duplicate id).
	for _, n := range g.Nodes {
		if n.Type != legacyTypeEnd {
			delete(ends, n.ID)
		}
	}
	edges := g.Edges[:0]
	for _, e := range g.Edges {
		_, src := ends[e.Source]
		_, dst := ends[e.Target]
		if src {
			ends[e.Source]++
		}
		if dst && e.Target != e.Source {
			ends[e.Target]++
		}
		if !src && !dst {
			edges = append(edges, e)
		}
	}
	clear(g.Edges[len(edges):])
	g.Edges = edges

	nodes := g.Nodes[:0]
	for _, n := range g.Nodes {
		if n.Type != legacyTypeEnd {
			nodes = append(nodes, n)
			continue
		}
		msg := fmt.Sprintf("removed legacy end node %q", n.ID)
		if c, ok := ends[n.ID]; ok && c > 0 {
			msg += fmt.Sprintf(" and its %d edge(s)", c)
			ends[n.ID] = 0 // report the edges once for duplicate end ids
		}
		problems = append(problems, Problem{
			Code: CodeLegacyEndRemoved, Severity: SeverityWarning, NodeID: n.ID,
			Message: msg + "; a branch now ends where it has no outgoing edge",
		})
	}
	clear(g.Nodes[len(nodes):])
	g.Nodes = nodes
	return problems
}
