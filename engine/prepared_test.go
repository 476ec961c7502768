package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/graph"
)

// One prepared graph is started by many runs at once: they share its plan
// and definition, and each run takes its own branch from its own input
// (-race checks that nothing of the prepared graph is written).
func TestPreparedGraphSharedByConcurrentRuns(t *testing.T) {
	e, _ := newLLMEngine(t, Config{})
	g := (&gb{}).
		node("s", graph.TypeStart, graph.NodeData{}).
		node("c", graph.TypeIf, graph.NodeData{Conditions: []graph.Condition{{Operator: graph.OpContains, Value: "odd"}}}).
		node("yes", graph.TypeAgent, graph.NodeData{UserPrompt: "odd one"}).
		node("no", graph.TypeAgent, graph.NodeData{UserPrompt: "even one"}).
		edge("s", "output", "c").edge("c", "true", "yes").edge("c", "false", "no").build()
	pg, err := e.PrepareGraph(g)
	if err != nil {
		t.Fatal(err)
	}
	if !pg.HasAgent() {
		t.Fatal("HasAgent: false for a graph with agents")
	}
	def := string(pg.Definition())
	const n = 24
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			in := "even"
			if i%2 == 1 {
				in = "odd"
			}
			run, err := e.StartPrepared(context.Background(), pg, StartOptions{Input: fmt.Sprintf("%s %d", in, i)})
			if err != nil {
				t.Errorf("start %d: %v", i, err)
				return
			}
			ids[i] = run.ID
		})
	}
	wg.Wait()
	for i, id := range ids {
		if id == "" {
			continue
		}
		r := waitRun(t, e, id)
		if r.Status != StatusCompleted {
			t.Fatalf("run %d: %s %s", i, r.Status, r.Error)
		}
		if string(r.Definition) != def {
			t.Fatalf("run %d stored another definition:\n%s\nwant\n%s", i, r.Definition, def)
		}
		ns := nodeStates(t, e, id)
		ran, skipped := "no", "yes"
		if i%2 == 1 {
			ran, skipped = "yes", "no"
		}
		if ns[ran].Status != NodeCompleted || ns[skipped].Status == NodeCompleted {
			t.Fatalf("run %d (input %d): %s is %s, %s is %s", i, i, ran, ns[ran].Status, skipped, ns[skipped].Status)
		}
	}
	if string(pg.Definition()) != def {
		t.Fatal("the prepared definition changed after runs started from it")
	}
}

// A graph with errors is not prepared: the problems come back as they did
// from StartGraph.
func TestPrepareGraphRefusesErrors(t *testing.T) {
	e, _ := newTestEngine(t, Config{})
	g := (&gb{}).node("a", graph.TypeAgent, graph.NodeData{}).build() // no start node
	_, err := e.PrepareGraph(g)
	var inv *InvalidError
	if !errors.As(err, &inv) || !graph.HasErrors(inv.Problems) {
		t.Fatalf("PrepareGraph of a graph without start: %v, want an InvalidError", err)
	}
}
