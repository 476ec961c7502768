package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/graph"
)

func cond(op, v string) graph.Condition { return graph.Condition{Operator: op, Value: v} }

func TestIfBranchesAndJoinSkips(t *testing.T) {
	// start -> if -(contains failed)-> a1 -> join
	//             -(false)-----------> b1 -> join
	// Both branch heads are if nodes passing their input through, so no LLM.
	b := (&gb{}).
		node("s", "start", graph.NodeData{InitialInput: "The build FAILED"}).
		node("check", "if", graph.NodeData{Conditions: []graph.Condition{cond("contains", " failed "), cond("equal", "ok")}}).
		node("a1", "agent", graph.NodeData{}).
		node("b1", "agent", graph.NodeData{}).
		node("join", "agent", graph.NodeData{}).
		node("after", "agent", graph.NodeData{}).
		edge("s", "output", "check").
		edge("check", "condition-0", "a1").
		edge("check", "false", "b1").
		edge("a1", "output", "join").
		edge("b1", "output", "join").
		edge("join", "output", "after")
	e, rec := newLLMEngine(t, Config{})
	run, err := e.StartGraph(context.Background(), b.build(), StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, e, run.ID)
	if got.Status != StatusCompleted {
		t.Fatalf("status %s (%s)", got.Status, got.Error)
	}
	ns := nodeStates(t, e, run.ID)
	want := map[string]NodeStatus{"s": NodeCompleted, "check": NodeCompleted, "a1": NodeCompleted,
		"b1": NodeSkipped, "join": NodeCompleted, "after": NodeCompleted}
	for id, st := range want {
		if ns[id].Status != st {
			t.Errorf("node %s: status %q, want %q", id, ns[id].Status, st)
		}
	}
	if ns["join"].Input != "echo: The build FAILED" || ns["join"].Visits != 1 {
		t.Errorf("join input %q visits %d", ns["join"].Input, ns["join"].Visits)
	}
	checks := rec.ofType(run.ID, EvLogicCheck)
	if len(checks) < 1 || checks[0].Content != `Condition 1 (contains " failed ") evaluated as true` {
		t.Errorf("logic_check events: %+v", checks)
	}
	checkSeq(t, rec.events(run.ID))
}

func TestIfConditionSemantics(t *testing.T) {
	tests := []struct {
		name  string
		input string
		conds []graph.Condition
		want  string
		n     int // logic_check events
	}{
		{"equal case-insensitive", "YES", []graph.Condition{cond("equal", " yes ")}, "condition-0", 1},
		{"equal is not contains", "yes please", []graph.Condition{cond("equal", "yes")}, "false", 1},
		{"contains", "all tests passed", []graph.Condition{cond("contains", "nope"), cond("contains", "PASSED")}, "condition-1", 2},
		{"first match wins", "abc", []graph.Condition{cond("contains", "a"), cond("contains", "b")}, "condition-0", 1},
		{"empty value never matches", "", []graph.Condition{cond("equal", "  ")}, "false", 1},
		{"no conditions", "x", nil, "false", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := (&gb{}).node("s", "start", graph.NodeData{}).node("c", "if", graph.NodeData{Conditions: tc.conds}).
				edge("s", "output", "c")
			e, rec := newLLMEngine(t, Config{})
			g := b.build()
			// A branch edge makes the if valid; it goes to an if that ends.
			g.Nodes = append(g.Nodes, graph.Node{ID: "end", Type: "agent"})
			g.Edges = append(g.Edges, graph.Edge{ID: "ex", Source: "c", Target: "end", SourceHandle: "false"})
			run, err := e.StartGraph(context.Background(), g, StartOptions{Input: tc.input})
			if err != nil {
				t.Fatal(err)
			}
			if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			ns := nodeStates(t, e, run.ID)
			if ns["c"].Handle != tc.want || ns["c"].Output != tc.input {
				t.Errorf("handle %q output %q, want %q", ns["c"].Handle, ns["c"].Output, tc.want)
			}
			if n := len(rec.ofType(run.ID, EvLogicCheck)); n != tc.n {
				t.Errorf("%d logic checks, want %d", n, tc.n)
			}
			if tc.want != "false" && len(rec.ofType(run.ID, EvWarning)) == 0 {
				t.Errorf("no warning for a branch without an edge")
			}
		})
	}
}

func approvalGraph() *graph.Graph {
	return (&gb{}).
		node("s", "start", graph.NodeData{InitialInput: "draft"}).
		node("ok", "approval", graph.NodeData{Prompt: "Publish?"}).
		node("yes", "agent", graph.NodeData{}).
		node("no", "agent", graph.NodeData{}).
		edge("s", "output", "ok").
		edge("ok", "approve", "yes").
		edge("ok", "reject", "no").build()
}

func TestApprovalPauseAndResume(t *testing.T) {
	for _, decision := range []string{"approve", "REJECT"} {
		t.Run(decision, func(t *testing.T) {
			ctx := context.Background()
			e, rec := newLLMEngine(t, Config{})
			run, err := e.StartGraph(ctx, approvalGraph(), StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := waitRun(t, e, run.ID)
			if r.Status != StatusPaused || !r.WaitingForInput || r.CurrentNodeID != "ok" {
				t.Fatalf("after start: %+v", r)
			}
			if len(r.PendingApprovals) != 1 || r.PendingApprovals[0].Prompt != "Publish?" || r.PendingApprovals[0].Input != "draft" {
				t.Fatalf("pending approvals: %+v", r.PendingApprovals)
			}
			if w := rec.ofType(run.ID, EvWaitInput); len(w) != 1 || w[0].Content != "Publish?" {
				t.Fatalf("wait_input: %+v", w)
			}
			// Fail closed: anything but approve/reject changes nothing.
			if _, err := e.Resume(ctx, run.ID, "ok", Decision{Decision: "yes"}); !errors.Is(err, ErrInvalidDecision) {
				t.Fatalf("bad decision: %v", err)
			}
			if r, _ := e.Store().GetRun(ctx, run.ID); r.Status != StatusPaused {
				t.Fatalf("bad decision changed status to %s", r.Status)
			}
			if _, err := e.Resume(ctx, run.ID, "ok", Decision{Decision: decision, Note: "too long"}); err != nil {
				t.Fatal(err)
			}
			r = waitRun(t, e, run.ID)
			if r.Status != StatusCompleted {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			ns := nodeStates(t, e, run.ID)
			taken, other := "yes", "no"
			wantMsg := "User approved this step."
			if strings.EqualFold(decision, "reject") {
				taken, other = "no", "yes"
				wantMsg = "User rejected this step. Feedback: too long"
			}
			if ns[taken].Status != NodeCompleted || ns[taken].Input != "draft" || ns[other].Status != NodeSkipped {
				t.Errorf("taken %+v other %+v", ns[taken], ns[other])
			}
			if got := rec.ofType(run.ID, EvInputReceived); len(got) != 1 || got[0].Content != wantMsg {
				t.Errorf("input_received: %+v", got)
			}
			// A second answer to the same approval is a conflict.
			if _, err := e.Resume(ctx, run.ID, "ok", Decision{Decision: "approve"}); err == nil {
				t.Errorf("second resume succeeded")
			}
			checkSeq(t, rec.events(run.ID))
		})
	}
}

func TestMultiplePendingApprovalsAndPauseQueue(t *testing.T) {
	// s fans out to two approvals and to a chain of two if nodes. All
	// approvals must be answered; the run stays paused while any waits.
	g := (&gb{}).
		node("s", "start", graph.NodeData{InitialInput: "x"}).
		node("a1", "approval", graph.NodeData{Prompt: "first"}).
		node("a2", "approval", graph.NodeData{Prompt: "second"}).
		node("d1", "agent", graph.NodeData{}).
		node("d2", "agent", graph.NodeData{}).
		node("join", "agent", graph.NodeData{}).
		edge("s", "output", "a1").edge("s", "output", "a2").
		edge("a1", "approve", "d1").edge("a2", "approve", "d2").
		edge("d1", "output", "join").edge("d2", "output", "join").build()
	ctx := context.Background()
	e, _ := newLLMEngine(t, Config{})
	run, err := e.StartGraph(ctx, g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	if r.Status != StatusPaused || len(r.PendingApprovals) != 2 {
		t.Fatalf("%s %+v", r.Status, r.PendingApprovals)
	}
	if r.PendingApprovals[0].NodeID != "a1" || r.PendingApprovals[1].NodeID != "a2" {
		t.Fatalf("pending order %+v", r.PendingApprovals)
	}
	if _, err := e.Resume(ctx, run.ID, "", Decision{Decision: "approve"}); !errors.Is(err, ErrNotWaiting) {
		t.Fatalf("ambiguous resume: %v", err)
	}
	if _, err := e.Resume(ctx, run.ID, "a2", Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	r = waitRun(t, e, run.ID)
	if r.Status != StatusPaused || len(r.PendingApprovals) != 1 || r.PendingApprovals[0].NodeID != "a1" {
		t.Fatalf("after one approval: %s %+v", r.Status, r.PendingApprovals)
	}
	ns := nodeStates(t, e, run.ID)
	// d2 became ready while paused: queued, not started.
	if ns["d2"].Status != NodeQueued {
		t.Fatalf("d2 status %q, want queued while paused", ns["d2"].Status)
	}
	if _, err := e.Resume(ctx, run.ID, "a1", Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	r = waitRun(t, e, run.ID)
	if r.Status != StatusCompleted {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	ns = nodeStates(t, e, run.ID)
	if ns["join"].Status != NodeCompleted || ns["join"].Input != "echo: x\n\necho: x" {
		t.Fatalf("join %+v", ns["join"])
	}
}

func TestReviseLoopThroughApprovalAndMaxVisits(t *testing.T) {
	// s -> work -> gate -(reject)-> work (loop); gate -(approve)-> done.
	g := (&gb{}).
		node("s", "start", graph.NodeData{InitialInput: "v1"}).
		node("work", "agent", graph.NodeData{}).
		node("gate", "approval", graph.NodeData{}).
		node("done", "agent", graph.NodeData{}).
		edge("s", "output", "work").
		edge("work", "output", "gate").
		edge("gate", "reject", "work").
		edge("gate", "approve", "done").build()
	ctx := context.Background()
	e, rec := newLLMEngine(t, Config{MaxVisits: 3})
	run, err := e.StartGraph(ctx, g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if r := waitRun(t, e, run.ID); r.Status != StatusPaused {
			t.Fatalf("round %d: %s %s", i, r.Status, r.Error)
		}
		if _, err := e.Resume(ctx, run.ID, "gate", Decision{Decision: "reject", Note: "again"}); err != nil {
			t.Fatal(err)
		}
	}
	r := waitRun(t, e, run.ID)
	if r.Status != StatusPaused {
		t.Fatalf("third round: %s", r.Status)
	}
	ns := nodeStates(t, e, run.ID)
	if ns["work"].Visits != 3 || ns["work"].Rejection != "again" || ns["work"].Input != "echo: echo: v1" {
		t.Fatalf("work %+v", ns["work"])
	}
	if ns["done"].Status == NodeSkipped {
		t.Fatalf("done was skipped while the loop could still approve")
	}
	// One more reject would run work a 4th time: the run fails naming it.
	if _, err := e.Resume(ctx, run.ID, "gate", Decision{Decision: "reject"}); err != nil {
		t.Fatal(err)
	}
	r = waitRun(t, e, run.ID)
	if r.Status != StatusFailed || !strings.Contains(r.Error, `"work"`) || !strings.Contains(r.Error, "maxVisits") {
		t.Fatalf("status %s error %q", r.Status, r.Error)
	}
	checkSeq(t, rec.events(run.ID))
}

func TestReviseLoopApproveCompletes(t *testing.T) {
	g := (&gb{}).
		node("s", "start", graph.NodeData{}).
		node("work", "agent", graph.NodeData{}).
		node("gate", "approval", graph.NodeData{}).
		node("done", "agent", graph.NodeData{}).
		edge("s", "output", "work").edge("work", "output", "gate").
		edge("gate", "reject", "work").edge("gate", "approve", "done").build()
	ctx := context.Background()
	e, _ := newLLMEngine(t, Config{})
	run, _ := e.StartGraph(ctx, g, StartOptions{Input: "in"})
	waitRun(t, e, run.ID)
	e.Resume(ctx, run.ID, "gate", Decision{Decision: "reject", Note: "n"})
	waitRun(t, e, run.ID)
	if _, err := e.Resume(ctx, run.ID, "gate", Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	ns := nodeStates(t, e, run.ID)
	if r.Status != StatusCompleted || ns["done"].Status != NodeCompleted || ns["work"].Visits != 2 || ns["done"].Rejection != "" {
		t.Fatalf("%s %+v %+v", r.Status, ns["done"], ns["work"])
	}
}

func TestInvalidGraphNeverStarts(t *testing.T) {
	e, _ := newLLMEngine(t, Config{})
	g := (&gb{}).node("a", "agent", graph.NodeData{}).build()
	_, err := e.StartGraph(context.Background(), g, StartOptions{})
	var inv *InvalidError
	if !errors.As(err, &inv) || !errors.Is(err, ErrInvalidWorkflow) || len(inv.Problems) == 0 {
		t.Fatalf("err %v", err)
	}
	runs, _ := e.Store().ListRuns(context.Background(), RunFilter{})
	if len(runs) != 0 {
		t.Fatalf("an invalid graph created %d runs", len(runs))
	}
}

func TestPausedRunResumesInAnotherEngine(t *testing.T) {
	// A paused run holds no goroutine: a new engine on the same store
	// answers the approval and finishes the run.
	ctx := context.Background()
	st := NewMemStore()
	e1, _ := newLLMEngine(t, Config{Store: st})
	run, err := e1.StartGraph(ctx, approvalGraph(), StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, e1, run.ID)
	e1.Close()
	e2, rec := newLLMEngine(t, Config{Store: st})
	if _, err := e2.Resume(ctx, run.ID, "ok", Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e2, run.ID)
	if r.Status != StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	evs, _ := st.Events(ctx, run.ID, 0, 0)
	checkSeq(t, evs)
	// The second engine's events continue the numbering.
	if first := rec.events(run.ID); len(first) == 0 || first[0].Seq <= 1 {
		t.Fatalf("seq did not continue: %+v", first)
	}
}

func TestConcurrentResumesExactlyOneWins(t *testing.T) {
	ctx := context.Background()
	st := NewMemStore()
	e, _ := newLLMEngine(t, Config{Store: st})
	run, _ := e.StartGraph(ctx, approvalGraph(), StartOptions{})
	waitRun(t, e, run.ID)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.Resume(ctx, run.ID, "ok", Decision{Decision: "approve"}); err == nil {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d resumes won", wins.Load())
	}
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatalf("%s", r.Status)
	}
}

func TestCancelPausedRun(t *testing.T) {
	ctx := context.Background()
	e, rec := newLLMEngine(t, Config{})
	run, _ := e.StartGraph(ctx, approvalGraph(), StartOptions{})
	waitRun(t, e, run.ID)
	if _, err := e.Cancel(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	if r.Status != StatusCancelled || r.FinishedAt == nil {
		t.Fatalf("%+v", r)
	}
	if _, err := e.Resume(ctx, run.ID, "ok", Decision{Decision: "approve"}); !errors.Is(err, ErrTerminal) {
		t.Fatalf("resume after cancel: %v", err)
	}
	sts := rec.ofType(run.ID, EvRunStatus)
	if len(sts) == 0 || sts[len(sts)-1].Content != "cancelled" {
		t.Fatalf("run_status events %+v", sts)
	}
}
