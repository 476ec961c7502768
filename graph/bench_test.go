package graph

import (
	"encoding/json"
	"fmt"
	"testing"
)

// bigGraph builds a valid graph of n nodes shaped like real workflows: a
// chain of agents with an if node (looping back) every 10th node, an
// approval every 25th and a two-level subagent tree every 50th.
func bigGraph(n int) *Graph {
	g := &Graph{Nodes: make([]Node, 0, n), Edges: make([]Edge, 0, n+n/10)}
	g.Nodes = append(g.Nodes, start("n0"))
	prev := "n0"
	for i := 1; len(g.Nodes) < n; i++ {
		id := fmt.Sprintf("n%d", i)
		pos := Position{X: float64(i * 200), Y: float64(i % 7 * 90)}
		link := func(handle string) {
			g.Edges = append(g.Edges, Edge{ID: "e" + id, Source: prev, Target: id, SourceHandle: handle, TargetHandle: HandleInput})
		}
		handle := HandleOutput
		switch g.Nodes[len(g.Nodes)-1].Type {
		case TypeIf:
			handle = "condition-1"
		case TypeApproval:
			handle = HandleApprove
		}
		switch {
		case i%10 == 0:
			n := ifNode(id, Condition{OpEqual, "done"}, Condition{OpContains, "more"})
			n.Position = pos
			g.Nodes = append(g.Nodes, n)
			link(handle)
			// condition-0 loops back for a revision
			g.Edges = append(g.Edges, Edge{ID: "b" + id, Source: id, Target: prev, SourceHandle: "condition-0"})
		case i%25 == 0:
			n := approval(id)
			n.Position = pos
			g.Nodes = append(g.Nodes, n)
			link(handle)
			g.Edges = append(g.Edges, Edge{ID: "r" + id, Source: id, Target: prev, SourceHandle: HandleReject})
		case i%50 == 1 && len(g.Nodes)+3 <= n:
			lead := parent(id, "Lead "+id)
			lead.Position = pos
			g.Nodes = append(g.Nodes, lead)
			link(handle)
			mid, leaf := parent(id+"m", "Mid "+id), agent(id+"l", "Leaf "+id)
			g.Nodes = append(g.Nodes, mid, leaf)
			g.Edges = append(g.Edges, sub("s"+id, id, id+"m"), sub("s"+id+"m", id+"m", id+"l"))
		default:
			a := agent(id, "Agent "+id)
			a.Position = pos
			g.Nodes = append(g.Nodes, a)
			link(handle)
		}
		prev = id
	}
	return g
}

func TestBigGraphIsValid(t *testing.T) {
	t.Parallel()
	g := bigGraph(10_000)
	if len(g.Nodes) != 10_000 {
		t.Fatalf("%d nodes", len(g.Nodes))
	}
	if ps := Validate(g); len(ps) != 0 {
		t.Fatalf("bigGraph has %d problems, first: %+v", len(ps), ps[0])
	}
}

func BenchmarkValidate10k(b *testing.B) {
	g := bigGraph(10_000)
	b.ReportAllocs()
	for b.Loop() {
		if ps := Validate(g); len(ps) != 0 {
			b.Fatal(ps[0])
		}
	}
}

// BenchmarkDecodeNormalize10k decodes the big graph in the legacy shape
// (x/y, connections without ids or handles), so every rule has work to do.
func BenchmarkDecodeNormalize10k(b *testing.B) {
	g := bigGraph(10_000)
	type legacyNode struct {
		ID   string   `json:"id"`
		Type string   `json:"type"`
		X    float64  `json:"x"`
		Y    float64  `json:"y"`
		Data NodeData `json:"data"`
	}
	type legacyEdge struct {
		Source       string `json:"source"`
		Target       string `json:"target"`
		SourceHandle string `json:"sourceHandle,omitempty"`
	}
	var legacy struct {
		Nodes       []legacyNode `json:"nodes"`
		Connections []legacyEdge `json:"connections"`
	}
	for _, n := range g.Nodes {
		if n.Type == TypeApproval {
			n.Type = "input"
		}
		legacy.Nodes = append(legacy.Nodes, legacyNode{n.ID, n.Type, n.Position.X, n.Position.Y, n.Data})
	}
	for _, e := range g.Edges {
		h := e.SourceHandle
		if h == HandleOutput {
			h = ""
		}
		legacy.Connections = append(legacy.Connections, legacyEdge{e.Source, e.Target, h})
	}
	data, err := json.Marshal(legacy)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		g, _, err := Decode(data)
		if err != nil {
			b.Fatal(err)
		}
		if len(g.Nodes) != 10_000 {
			b.Fatal(len(g.Nodes))
		}
	}
}
