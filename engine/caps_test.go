package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

func wideGraph(n int) *graph.Graph {
	b := (&gb{}).node("s", "start", graph.NodeData{})
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("a%d", i)
		b.node(id, "agent", agent(id)).edge("s", "output", id)
	}
	return b.build()
}

func TestCaps(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		runs int
		want int64
	}{
		{"per-run node cap", Config{MaxParallel: 4}, 1, 4},
		{"process-wide LLM cap across runs", Config{MaxParallel: 16, MaxLLMCalls: 3}, 2, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newLLMEngine(t, tc.cfg, fakeopenai.WithLatency(50*time.Millisecond))
			srv := testFake[t.Name()]
			var ids []string
			for i := 0; i < tc.runs; i++ {
				run, err := e.StartGraph(context.Background(), wideGraph(12), StartOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, run.ID)
			}
			for _, id := range ids {
				if r := waitRun(t, e, id); r.Status != StatusCompleted {
					t.Fatalf("%s %s", r.Status, r.Error)
				}
			}
			if mc := srv.MaxConcurrent(); mc != tc.want {
				t.Errorf("max concurrent LLM requests %d, want exactly %d", mc, tc.want)
			}
		})
	}
}
