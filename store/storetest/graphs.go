package storetest

import (
	"fmt"

	"github.com/switchyard/switchyard/graph"
)

// Graphs for the tests and benchmarks that run the engine on a store.

// Chain is start -> n nodes of typ in a line; the last one is an agent (a
// valid leaf). if nodes pass their input through on the "false" branch.
func Chain(n int, typ string) *graph.Graph {
	g := &graph.Graph{Nodes: []graph.Node{{ID: "s", Type: graph.TypeStart}}}
	prev, handle := "s", graph.HandleOutput
	for i := range n {
		id := fmt.Sprintf("n%d", i)
		t := typ
		if i == n-1 {
			t = graph.TypeAgent
		}
		g.Nodes = append(g.Nodes, graph.Node{ID: id, Type: t, Data: graph.NodeData{UserPrompt: "hi"}})
		g.Edges = append(g.Edges, graph.Edge{ID: "e" + id, Source: prev, Target: id, SourceHandle: handle})
		prev, handle = id, graph.HandleOutput
		if t == graph.TypeIf {
			handle = graph.HandleFalse
		}
	}
	return g
}

// Fanout is start -> n branches of typ -> one joining agent.
func Fanout(n int, typ string) *graph.Graph {
	g := &graph.Graph{Nodes: []graph.Node{{ID: "s", Type: graph.TypeStart},
		{ID: "join", Type: graph.TypeAgent, Data: graph.NodeData{UserPrompt: "hi"}}}}
	handle := graph.HandleOutput
	if typ == graph.TypeIf {
		handle = graph.HandleFalse
	}
	for i := range n {
		id := fmt.Sprintf("b%d", i)
		g.Nodes = append(g.Nodes, graph.Node{ID: id, Type: typ, Data: graph.NodeData{UserPrompt: "hi"}})
		g.Edges = append(g.Edges,
			graph.Edge{ID: "in" + id, Source: "s", Target: id, SourceHandle: graph.HandleOutput},
			graph.Edge{ID: "out" + id, Source: id, Target: "join", SourceHandle: handle})
	}
	return g
}

// approvalGraph is start → approval: it pauses at once.
func approvalGraph() *graph.Graph {
	return &graph.Graph{Nodes: []graph.Node{{ID: "s", Type: graph.TypeStart},
		{ID: "ok", Type: graph.TypeApproval, Data: graph.NodeData{Prompt: "go?"}}},
		Edges: []graph.Edge{{ID: "e1", Source: "s", Target: "ok", SourceHandle: graph.HandleOutput}}}
}
