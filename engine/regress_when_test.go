package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// issue13WhenYAML is the reproduction from issue #13: conditions and every
// trigger rule, with one node failing. Before the fix about half its runs
// ended "failed" with nfmos and done still pending.
const issue13WhenYAML = `name: when
description: conditions and trigger rules
nodes:
  - id: a
    bash: "echo '{\"n\": 10, \"kind\": \"bug\"}'"
  - {id: gt, bash: echo gt, depends_on: [a], when: "$a.output.n > 5"}
  - {id: lt, bash: echo lt, depends_on: [a], when: "$a.output.n < 5"}
  - {id: short, bash: echo short, depends_on: [a], when: "$a.kind == 'bug' && $a.output.n >= 10"}
  - {id: orr, bash: echo orr, depends_on: [a], when: "$a.output.kind == 'feature' || $a.output.n == '10'"}
  - {id: garbage, bash: echo garbage, depends_on: [a], when: "a is big"}
  - {id: one, bash: echo one, depends_on: [gt, lt], trigger_rule: one_success}
  - {id: all, bash: echo all, depends_on: [gt, lt]}
  - {id: boom, bash: exit 3}
  - {id: nfmos, bash: echo nfmos, depends_on: [gt, boom], trigger_rule: none_failed_min_one_success}
  - {id: done, bash: echo done, depends_on: [boom, lt], trigger_rule: all_done}
`

// TestRegressIssue13WhenRepro runs the issue's workflow 50 times with real
// bash: every node must end decided, whatever order the processes finish in.
func TestRegressIssue13WhenRepro(t *testing.T) {
	want := map[string]NodeStatus{
		"a": NodeCompleted, "gt": NodeCompleted, "lt": NodeSkipped, "short": NodeCompleted,
		"orr": NodeCompleted, "garbage": NodeSkipped, "one": NodeCompleted, "all": NodeSkipped,
		"boom": NodeFailed, "nfmos": NodeSkipped, "done": NodeCompleted,
	}
	e, _ := yamlEngine(t)
	bad := 0
	for k := range 50 {
		run, ns := runYAMLT(t, e, issue13WhenYAML, "")
		var wrong []string
		if run.Status != StatusFailed || !strings.Contains(run.Error, `"boom"`) {
			wrong = append(wrong, "run "+string(run.Status)+" ("+run.Error+")")
		}
		for id, st := range want {
			if ns[id] == nil || ns[id].Status != st {
				got := NodeStatus("missing")
				if ns[id] != nil {
					got = ns[id].Status
				}
				wrong = append(wrong, id+"="+string(got)+" (want "+string(st)+")")
			}
		}
		if len(wrong) > 0 {
			bad++
			t.Errorf("run %d of 50: %s", k+1, strings.Join(wrong, ", "))
		}
	}
	if bad > 0 {
		t.Logf("%d of 50 runs ended wrong", bad)
	}
}

// The regressions below are the counterexamples the model-based test
// (model_test.go) found, shrunk by hand to a deterministic form.

// A YAML node that fails while the run is paused fails the run, after the
// approval is answered in a reloaded runner (the flag that remembered the
// failure lived only in the loop that paused).
func TestRegressFailureWhilePausedFailsRun(t *testing.T) {
	e, _ := yamlEngine(t)
	run := startYAMLT(t, e, wf(`
  - id: gate
    approval: {message: "go?"}
  - id: boom
    bash: "sleep 0.05; exit 2"
  - id: after
    bash: echo after
    depends_on: [gate]
`), "")
	if r := waitRun(t, e, run.ID); r.Status != StatusPaused {
		t.Fatalf("status %s, want paused", r.Status)
	}
	if _, err := e.Resume(context.Background(), run.ID, "gate", Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	ns := nodeStates(t, e, run.ID)
	if r.Status != StatusFailed || !strings.Contains(r.Error, `"boom"`) {
		t.Fatalf("run %s (%q), want failed naming boom", r.Status, r.Error)
	}
	wantStatuses(t, ns, map[string]NodeStatus{"gate": NodeCompleted, "boom": NodeFailed, "after": NodeCompleted})
}

// A run that ends early ends its approvals too: none is left "waiting" in a
// finished run (cancelled by the user, or failed by another node).
func TestRegressEarlyEndEndsWaitingApprovals(t *testing.T) {
	ctx := context.Background()
	t.Run("cancel", func(t *testing.T) {
		e, rec := newTestEngine(t, Config{})
		run, err := e.StartGraph(ctx, approvalGraph(), StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitRun(t, e, run.ID)
		if _, err := e.Cancel(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
		r := waitRun(t, e, run.ID)
		ok := nodeStates(t, e, run.ID)["ok"]
		if r.Status != StatusCancelled || ok.Status != NodeFailed || ok.Error != "cancelled" {
			t.Fatalf("run %s, approval %s (%q): want cancelled, failed (cancelled)", r.Status, ok.Status, ok.Error)
		}
		if evs := eventsOf(rec, run.ID, "ok", EvStepEnd); len(evs) != 1 || stepEndStatus(evs[0]) != string(NodeFailed) {
			t.Fatalf("approval step_end events %+v", evs)
		}
	})
	t.Run("fail-fast", func(t *testing.T) {
		// No LLM is configured: the agent fails while the approval waits.
		g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "x"}).
			node("gate", "approval", graph.NodeData{}).node("bad", "agent", graph.NodeData{}).
			node("next", "agent", graph.NodeData{}).
			edge("s", "output", "gate").edge("s", "output", "bad").edge("gate", "approve", "next").build()
		e, _ := newTestEngine(t, Config{})
		run, err := e.StartGraph(ctx, g, StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := waitRun(t, e, run.ID)
		ns := nodeStates(t, e, run.ID)
		if r.Status != StatusFailed || ns["gate"].Status != NodeFailed || ns["bad"].Status != NodeFailed {
			t.Fatalf("run %s, gate %s, bad %s: want all failed", r.Status, ns["gate"].Status, ns["bad"].Status)
		}
	})
}

// A repeated edge is ignored, as validation warns: the join does not get
// the same input twice.
func TestRegressRepeatedEdgeIgnored(t *testing.T) {
	g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "hello"}).
		node("c", "if", graph.NodeData{Conditions: []graph.Condition{cond("equal", "hello")}}).
		node("end", "agent", graph.NodeData{}).
		edge("s", "output", "c").edge("s", "output", "c").edge("c", "false", "end").build()
	e, _ := newTestEngine(t, Config{})
	run, err := e.StartGraph(context.Background(), g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	c := nodeStates(t, e, run.ID)["c"]
	if r.Status != StatusCompleted || c.Input != "hello" || c.Handle != "condition-0" {
		t.Fatalf("run %s (%s); c input %q handle %q, want \"hello\" condition-0", r.Status, r.Error, c.Input, c.Handle)
	}
}

// A node's self-loop does not hold up its own decision. It used to: the
// node blocked itself, the scheduler broke the "deadlock" by running
// another join first, with only part of its inputs.
func TestRegressSelfLoopDoesNotBlockItsNode(t *testing.T) {
	// s -> gate (approval, reject loops back to itself) -approve-> join;
	// s -> join. join must wait for the gate.
	g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "x"}).
		node("join", "agent", graph.NodeData{}).node("gate", "approval", graph.NodeData{}).
		edge("s", "output", "join").edge("s", "output", "gate").
		edge("gate", "approve", "join").edge("gate", "reject", "gate").build()
	ctx := context.Background()
	e, _ := newLLMEngine(t, Config{})
	run, err := e.StartGraph(ctx, g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := waitRun(t, e, run.ID); r.Status != StatusPaused {
		t.Fatalf("status %s (%s), want paused on gate", r.Status, r.Error)
	}
	if j := nodeStates(t, e, run.ID)["join"]; j.Visits != 0 {
		t.Fatalf("join ran (input %q) before the gate decided", j.Input)
	}
	if _, err := e.Resume(ctx, run.ID, "gate", Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	j := nodeStates(t, e, run.ID)["join"]
	if r.Status != StatusCompleted || j.Visits != 1 || j.Input != "x\n\nx" {
		t.Fatalf("run %s; join visits %d input %q, want 1 \"x\\n\\nx\"", r.Status, j.Visits, j.Input)
	}
}

// A skip that comes back round a cycle to a node already skipped stops
// there. It used to go round for ever: StartGraph never returned.
func TestRegressSkipAroundCycleEnds(t *testing.T) {
	for name, g := range map[string]*graph.Graph{
		"self-loop": (&gb{}).node("s", "start", graph.NodeData{InitialInput: "x"}).
			node("c", "if", graph.NodeData{Conditions: []graph.Condition{cond("equal", "nope")}}).
			node("a", "agent", graph.NodeData{}).
			edge("s", "output", "c").edge("c", "condition-0", "a").edge("a", "output", "a").build(),
		"two-node cycle": (&gb{}).node("s", "start", graph.NodeData{InitialInput: "x"}).
			node("c", "if", graph.NodeData{Conditions: []graph.Condition{cond("equal", "nope")}}).
			node("a", "agent", graph.NodeData{}).node("b", "agent", graph.NodeData{}).
			edge("s", "output", "c").edge("c", "condition-0", "a").edge("a", "output", "b").edge("b", "output", "a").build(),
	} {
		t.Run(name, func(t *testing.T) {
			e, rec := newTestEngine(t, Config{})
			started := make(chan *Run, 1)
			go func() {
				run, err := e.StartGraph(context.Background(), g, StartOptions{})
				if err != nil {
					t.Error(err)
				}
				started <- run
			}()
			var run *Run
			select {
			case run = <-started:
			case <-time.After(20 * time.Second):
				t.Fatal("StartGraph did not return: the skip goes round the cycle for ever")
			}
			if run == nil {
				return
			}
			r := waitRun(t, e, run.ID)
			ns := nodeStates(t, e, run.ID)
			if r.Status != StatusCompleted || ns["a"].Status != NodeSkipped {
				t.Fatalf("run %s, a %s", r.Status, ns["a"].Status)
			}
			if n := len(eventsOf(rec, run.ID, "a", EvStepEnd)); n != 1 {
				t.Fatalf("a has %d step_end events, want one skip", n)
			}
		})
	}
}

// loopWhilePausedGraph: a runs, then runs again through the if node c
// (while its first output passes c's condition); the approval g gets a's
// output each time. a's second visit is in flight when g pauses the run.
func loopWhilePausedGraph() *graph.Graph {
	return (&gb{}).node("s", "start", graph.NodeData{InitialInput: "x"}).
		node("a", "agent", graph.NodeData{}).
		node("c", "if", graph.NodeData{Conditions: []graph.Condition{cond("equal", "echo: x")}}).
		node("g", "approval", graph.NodeData{}).node("d", "agent", graph.NodeData{}).
		edge("s", "output", "a").edge("a", "output", "c").edge("c", "condition-0", "a").
		edge("a", "output", "g").edge("g", "approve", "d").build()
}

// A node whose input fires again while it waits for a human runs again
// after the answer, also when the answer is applied by a runner reloaded
// from the store (the notification used to live only in memory).
func TestRegressActivationWhileWaitingSurvivesReload(t *testing.T) {
	ctx := context.Background()
	e, _ := newLLMEngine(t, Config{})
	run, err := e.StartGraph(ctx, loopWhilePausedGraph(), StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := waitRun(t, e, run.ID); r.Status != StatusPaused {
		t.Fatalf("status %s (%s), want paused", r.Status, r.Error)
	}
	if a := nodeStates(t, e, run.ID)["a"]; a.Visits != 2 || a.Status != NodeCompleted {
		t.Fatalf("a visits %d status %s: want its second visit done while g waits", a.Visits, a.Status)
	}
	if _, err := e.Resume(ctx, run.ID, "g", Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	g := nodeStates(t, e, run.ID)["g"]
	if r.Status != StatusPaused || g.Visits != 2 || g.Input != "echo: echo: x" {
		t.Fatalf("run %s, g visits %d input %q: want g asked again with a's second output", r.Status, g.Visits, g.Input)
	}
	if _, err := e.Resume(ctx, run.ID, "g", Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatalf("status %s (%s)", r.Status, r.Error)
	}
}

// A node queued for a new visit while the run is paused starts normally
// after the answer: no "retry": "restart" (which says a process died).
func TestRegressNoRestartMarkAfterResume(t *testing.T) {
	ctx := context.Background()
	// s -> a -> g and b (approvals); g -reject-> a; g, b -approve-> d.
	// Rejecting g while b waits queues a's second visit in a paused run;
	// answering b applies it in a runner reloaded from the store.
	g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "x"}).
		node("a", "agent", graph.NodeData{}).node("g", "approval", graph.NodeData{}).
		node("b", "approval", graph.NodeData{}).node("d", "agent", graph.NodeData{}).
		edge("s", "output", "a").edge("a", "output", "g").edge("a", "output", "b").
		edge("g", "reject", "a").edge("g", "approve", "d").edge("b", "approve", "d").build()
	e, rec := newLLMEngine(t, Config{})
	run, err := e.StartGraph(ctx, g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	answered := map[string]int{}
	for round := 0; ; round++ {
		r := waitRun(t, e, run.ID)
		if r.Status != StatusPaused {
			if r.Status != StatusCompleted {
				t.Fatalf("status %s (%s)", r.Status, r.Error)
			}
			break
		}
		if round > 10 {
			t.Fatal("still paused after 10 answers")
		}
		// g rejects its first visit (g comes first in the pending list).
		pa := r.PendingApprovals[0]
		d := Decision{Decision: "approve"}
		if pa.NodeID == "g" && answered["g"] == 0 {
			d.Decision = "reject"
		}
		answered[pa.NodeID]++
		if _, err := e.Resume(ctx, run.ID, pa.NodeID, d); err != nil {
			t.Fatal(err)
		}
	}
	starts := eventsOf(rec, run.ID, "a", EvStepStart)
	for _, ev := range starts {
		if strings.Contains(string(ev.Data), "restart") {
			t.Fatalf("a restarted without a crash: %s", ev.Data)
		}
	}
	if a := nodeStates(t, e, run.ID)["a"]; len(starts) != 2 || a.Visits != 2 || a.Attempts != 1 {
		t.Fatalf("a: %d starts, visits %d, attempts %d; want 2, 2, 1 (attempts are per visit)", len(starts), a.Visits, a.Attempts)
	}
}

// A rejection note that reaches a pending join along an edge that had
// fired already is persisted too: a runner reloaded to apply an answer
// used to run the join with the note from before.
func TestRegressRejectionNoteSurvivesReload(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	// The "slow" agent answers only once released, so the gate k waits
	// only after the gate r does.
	e, _ := newLLMEngine(t, Config{}, fakeopenai.WithHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		user := ""
		for _, m := range req.Messages {
			if m.Role == "system" && m.Content == "slow" {
				<-release
			}
			if m.Role == "user" {
				user = m.Content
			}
		}
		return fakeopenai.Reply{Text: "echo: " + user}
	}))
	// s -> a -> r (approval) -reject-> a; a -> j; s -> slow -> k (approval)
	// -reject-> j. Rejecting r runs a again with the note, which a passes
	// to j; approving k then lets j run.
	g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "x"}).
		node("a", "agent", graph.NodeData{}).node("r", "approval", graph.NodeData{}).
		node("slow", "agent", graph.NodeData{SystemPrompt: "slow"}).node("k", "approval", graph.NodeData{}).
		node("j", "agent", graph.NodeData{}).
		edge("s", "output", "a").edge("a", "output", "r").edge("r", "reject", "a").edge("a", "output", "j").
		edge("s", "output", "slow").edge("slow", "output", "k").edge("k", "reject", "j").build()
	run, err := e.StartGraph(ctx, g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for nodeStates(t, e, run.ID)["r"].Status != NodeWaiting {
		if time.Now().After(deadline) {
			t.Fatal("r never waited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	answer := func(node, decision, note string) {
		t.Helper()
		if r := waitRun(t, e, run.ID); r.Status != StatusPaused {
			t.Fatalf("before answering %s: status %s (%s)", node, r.Status, r.Error)
		}
		if _, err := e.Resume(ctx, run.ID, node, Decision{Decision: decision, Note: note}); err != nil {
			t.Fatal(err)
		}
	}
	answer("r", "reject", "shorter please")
	answer("k", "approve", "")
	answer("r", "approve", "")
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatalf("status %s (%s)", r.Status, r.Error)
	}
	j := nodeStates(t, e, run.ID)["j"]
	if j.Status != NodeCompleted || j.Input != "echo: echo: x" || j.Rejection != "shorter please" {
		t.Fatalf("j %s input %q rejection %q, want completed \"echo: echo: x\" \"shorter please\"", j.Status, j.Input, j.Rejection)
	}
}
