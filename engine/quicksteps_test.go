package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
)

// runningSaves is a real MemStore that records which nodes its
// checkpoints stored as running.
type runningSaves struct {
	*MemStore
	mu      sync.Mutex
	running []string
}

func (s *runningSaves) Checkpoint(ctx context.Context, r *Run, nodes []*NodeState) error {
	s.mu.Lock()
	for _, n := range nodes {
		if n.Status == NodeRunning {
			s.running = append(s.running, n.NodeID)
		}
	}
	s.mu.Unlock()
	return s.MemStore.Checkpoint(ctx, r, nodes)
}

// quickEngine is an engine talking to the fake LLM through a runningSaves
// store, whose in-flight state would be flushed only after an hour: steps
// never run that long here, so a running state saved is a commit of its
// own that the loop made, not the flush. Its tests are not parallel, as
// no test of newLLMEngine is (it registers the fake in testFake).
func quickEngine(t *testing.T) (*Engine, *runningSaves) {
	t.Helper()
	st := &runningSaves{MemStore: NewMemStore()}
	e, _ := newLLMEngine(t, Config{Store: st})
	e.inFlightDelay = time.Hour
	return e, st
}

// startAndFinish starts g and waits for the run to reach want.
func startAndFinish(t *testing.T, e *Engine, g *graph.Graph, want RunStatus) *Run {
	t.Helper()
	run, err := e.StartGraph(context.Background(), g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	finishAs(t, e, run, want)
	return run
}

// finishAs waits for run to reach want.
func finishAs(t *testing.T, e *Engine, run *Run, want RunStatus) {
	t.Helper()
	if got := waitRun(t, e, run.ID); got.Status != want {
		t.Fatalf("run %s (%s), want %s", got.Status, got.Error, want)
	}
}

// noneSavedRunning fails t if a checkpoint stored a node as running.
func (s *runningSaves) noneSavedRunning(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.running) > 0 {
		t.Errorf("checkpoints stored these quick steps as running: %v", s.running)
	}
}

// A step that ends before inFlightPersistDelay is stored once, ended: its
// start is not committed on its own (the log's step_start says it was in
// flight, which is what recovery needs). The first agent step after the
// start node was: the start node's completion, applied before the run was
// created, left the loop going round once more after it dispatched the
// agent, and that round saved the agent as running, an extra commit per
// run.
func TestQuickStepsAreNotSavedRunning(t *testing.T) {
	e, st := quickEngine(t)
	g := (&gb{}).node("s", graph.TypeStart, graph.NodeData{InitialInput: "go"}).
		node("a", graph.TypeAgent, graph.NodeData{AgentName: "A"}).
		node("b", graph.TypeAgent, graph.NodeData{AgentName: "B"}).
		edge("s", "output", "a").edge("a", "output", "b").build()
	for range 5 {
		startAndFinish(t, e, g, StatusCompleted)
	}
	st.noneSavedRunning(t)
}

// The same for a YAML workflow: prompt nodes, a bash node between them.
func TestQuickYAMLStepsAreNotSavedRunning(t *testing.T) {
	e, st := quickEngine(t)
	src := wf("  - id: a\n    prompt: one\n  - id: b\n    bash: echo two\n    depends_on: [a]\n  - id: c\n    prompt: three\n    depends_on: [b]\n")
	for range 3 {
		finishAs(t, e, startYAMLT(t, e, src, ""), StatusCompleted)
	}
	st.noneSavedRunning(t)
}

// The same after a decision: the decision's request left a wake token
// that the round which read it did not take, so the loop went round once
// more after it dispatched the next agent step, and saved it as running.
func TestQuickStepsAfterADecisionAreNotSavedRunning(t *testing.T) {
	e, st := quickEngine(t)
	g := (&gb{}).node("s", graph.TypeStart, graph.NodeData{InitialInput: "go"}).
		node("ok", graph.TypeApproval, graph.NodeData{Prompt: "go?"}).
		node("a", graph.TypeAgent, graph.NodeData{AgentName: "A"}).
		edge("s", "output", "ok").edge("ok", "approve", "a").build()
	ctx := context.Background()
	for range 3 {
		run := startAndFinish(t, e, g, StatusPaused)
		if _, err := e.Resume(ctx, run.ID, "ok", Decision{Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		finishAs(t, e, run, StatusCompleted)
	}
	st.noneSavedRunning(t)
}
