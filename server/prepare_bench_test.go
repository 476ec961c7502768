package server

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

// fanoutGraph is start → width agents → join, as `load fanout` sends it.
func fanoutGraph(width int) *graph.Graph {
	b := newGraph().node("s", graph.TypeStart, graph.NodeData{}).
		node("join", graph.TypeAgent, graph.NodeData{AgentName: "Join", UserPrompt: "hi"})
	for i := range width {
		id := fmt.Sprintf("b%d", i)
		b.node(id, graph.TypeAgent, graph.NodeData{AgentName: id, UserPrompt: "hi"}).
			edge("s", "output", id).edge(id, "output", "join")
	}
	return b.build()
}

// BenchmarkPrepareFanoutGraph is what the first POST of a new 1,000-branch
// graph pays before its run starts: decode, validate, compile.
func BenchmarkPrepareFanoutGraph(b *testing.B) {
	e, err := engine.New(engine.Config{Store: engine.NewMemStore(), ArtifactsRoot: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	s := &Server{e: e, graphs: newGraphCache(1, 1<<30)}
	raw, err := json.Marshal(fanoutGraph(1000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.graphs = newGraphCache(1, 1<<30) // every graph new
		if _, err := s.prepareGraph(fromRequest, raw, decodeRequestGraph, nil); err != nil {
			b.Fatal(err)
		}
	}
}
