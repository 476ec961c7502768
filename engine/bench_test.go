package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
)

func instantLLM(b *testing.B) *llm.Client {
	b.Helper()
	fake := fakeopenai.New(fakeopenai.WithRequestLogLimit(0)) // no one reads its request log
	client, err := llm.New(llm.Config{BaseURL: "http://fake.invalid/v1", APIKey: "x",
		Transport: fakeopenai.InProcess{H: fake.Handler()}})
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// chainGraph: start -> n nodes of typ in a line. Pass-through if nodes
// end in one agent (a valid leaf).
func chainGraph(n int, typ string) *graph.Graph {
	g := &graph.Graph{Nodes: []graph.Node{{ID: "s", Type: "start"}}}
	prev, handle := "s", "output"
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i)
		t := typ
		if i == n-1 {
			t = "agent"
		}
		// A fixed prompt keeps every LLM reply the same size ("echo: hi").
		g.Nodes = append(g.Nodes, graph.Node{ID: id, Type: t, Data: graph.NodeData{UserPrompt: "hi"}})
		g.Edges = append(g.Edges, graph.Edge{ID: "e" + id, Source: prev, Target: id, SourceHandle: handle})
		prev = id
		handle = "output"
		if t == "if" {
			handle = "false"
		}
	}
	return g
}

// fanoutGraph: start -> n branches of typ -> one joining agent.
func fanoutGraph(n int, typ string) *graph.Graph {
	g := &graph.Graph{Nodes: []graph.Node{{ID: "s", Type: "start"}, {ID: "join", Type: "agent", Data: graph.NodeData{UserPrompt: "hi"}}}}
	handle := "output"
	if typ == "if" {
		handle = "false"
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("b%d", i)
		g.Nodes = append(g.Nodes, graph.Node{ID: id, Type: typ, Data: graph.NodeData{UserPrompt: "hi"}})
		g.Edges = append(g.Edges,
			graph.Edge{ID: "in" + id, Source: "s", Target: id, SourceHandle: "output"},
			graph.Edge{ID: "out" + id, Source: id, Target: "join", SourceHandle: handle})
	}
	return g
}

// benchRun starts g b.N times; prepared: from one PrepareGraph, as the
// server does for a graph it has seen (no validation or compilation per
// run).
func benchRun(b *testing.B, g *graph.Graph, nodes int, cfg Config, prepared ...bool) {
	b.Helper()
	cfg.LLM = instantLLM(b)
	cfg.ArtifactsRoot = b.TempDir()
	if cfg.MaxLLMCalls == 0 {
		cfg.MaxLLMCalls = 64
	}
	e, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	var pg *PreparedGraph
	if len(prepared) > 0 && prepared[0] {
		if pg, err = e.PrepareGraph(g); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var run *Run
		if pg != nil {
			run, err = e.StartPrepared(ctx, pg, StartOptions{Input: "x"})
		} else {
			run, err = e.StartGraph(ctx, g, StartOptions{Input: "x"})
		}
		if err != nil {
			b.Fatal(err)
		}
		r, err := e.Wait(ctx, run.ID)
		if err != nil || r.Status != StatusCompleted {
			b.Fatalf("run %v: %s %s", err, r.Status, r.Error)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	per := float64(b.N * nodes)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/per, "µs/node")
	// Per node, the figures the performance targets name (the fake LLM's
	// handler runs in process and is included).
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/per, "allocs/node")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/per, "B/node")
}

// BenchmarkEngine measures engine overhead per node in memory: pass-through
// if nodes (scheduler cost alone) and agent nodes calling an instant LLM
// through openai-go (scheduler + goroutine + SDK request/stream parsing).
func BenchmarkEngine(b *testing.B) {
	const n = 1000
	b.Run("chain1000/if", func(b *testing.B) { benchRun(b, chainGraph(n, "if"), n, Config{}) })
	b.Run("fanout1000/if", func(b *testing.B) { benchRun(b, fanoutGraph(n, "if"), n, Config{}) })
	b.Run("chain1000/agent", func(b *testing.B) { benchRun(b, chainGraph(n, "agent"), n, Config{}) })
	b.Run("fanout1000/agent", func(b *testing.B) { benchRun(b, fanoutGraph(n, "agent"), n, Config{}) })
	// Prepared once: the server's case for a graph it has seen before.
	b.Run("chain1000/if-prepared", func(b *testing.B) { benchRun(b, chainGraph(n, "if"), n, Config{}, true) })
	b.Run("fanout1000/if-prepared", func(b *testing.B) { benchRun(b, fanoutGraph(n, "if"), n, Config{}, true) })
	b.Run("chain1000/agent-prepared", func(b *testing.B) { benchRun(b, chainGraph(n, "agent"), n, Config{}, true) })
}
