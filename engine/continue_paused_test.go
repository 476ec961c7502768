package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/switchyard/switchyard/graph"
)

// blockingAgent holds its node until release is closed.
type blockingAgent struct{ release chan struct{} }

func (b blockingAgent) Execute(ctx context.Context, _ *Exec) (Result, error) {
	select {
	case <-b.release:
		return Result{Output: "done"}, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Continue on a paused run is a conflict whether or not the run's loop is
// still live (a branch still running beside the approval): it used to
// answer 200 with the paused run while the loop was live, and 409 once it
// had left, so the API's answer depended on timing.
func TestContinuePausedRunIsAConflictWhileLive(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	e, _ := newTestEngine(t, Config{Executors: map[string]Executor{graph.TypeAgent: blockingAgent{release}}})
	g := (&gb{}).node("s", graph.TypeStart, graph.NodeData{InitialInput: "x"}).
		node("ok", graph.TypeApproval, graph.NodeData{Prompt: "Go?"}).
		node("slow", graph.TypeAgent, graph.NodeData{AgentName: "Slow"}).
		node("after", graph.TypeAgent, graph.NodeData{AgentName: "After"}).
		edge("s", graph.HandleOutput, "ok").edge("s", graph.HandleOutput, "slow").
		edge("ok", graph.HandleApprove, "after").build()
	run, err := e.StartGraph(context.Background(), g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r, _, err := e.Snapshot(context.Background(), run.ID)
		return err == nil && r.Status == StatusPaused
	}, "run paused at the approval while slow runs")
	if _, err := e.Continue(context.Background(), run.ID); !errors.Is(err, ErrNotWaiting) {
		t.Fatalf("continue of a paused, live run: err %v, want ErrNotWaiting", err)
	}
	close(release)
	if _, err := e.Resume(context.Background(), run.ID, "ok", Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatalf("run %s, want completed", r.Status)
	}
}
