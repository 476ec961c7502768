package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
)

// jobsScript makes a lead agent call its subagent once per turn, with
// "job-1", "job-2", ... until it has n results, then answer; the kid
// answers "did job-k". It counts the kid's calls per job.
type jobsScript struct {
	n    int
	mu   sync.Mutex
	kid  map[string]int
	lead int
}

func (s *jobsScript) handle(req *fakeopenai.Request) fakeopenai.Reply {
	if req.HasTool("subagent_kid_kid") {
		s.mu.Lock()
		s.lead++
		s.mu.Unlock()
		done := len(req.ToolResults())
		if done >= s.n {
			var parts []string
			for _, m := range req.ToolResults() {
				parts = append(parts, m.Content)
			}
			return fakeopenai.Reply{Text: "all done: " + strings.Join(parts, ", ")}
		}
		return fakeopenai.Reply{Text: fmt.Sprintf("turn %d", done+1), ToolCalls: []fakeopenai.ToolCall{{
			ID: fmt.Sprintf("call_%d", done+1), Name: "subagent_kid_kid", Arguments: fmt.Sprintf(`{"input":"job-%d"}`, done+1)}}}
	}
	job := req.LastUserMessage()
	s.mu.Lock()
	s.kid[job]++
	s.mu.Unlock()
	return fakeopenai.Reply{Text: "did " + job}
}

func (s *jobsScript) kidCalls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.kid {
		out[k] = v
	}
	return out
}

func leadGraph() *graph.Graph {
	b := &gbuild{}
	b.node("s", graph.TypeStart, graph.NodeData{InitialInput: "go"}).
		node("lead", graph.TypeAgent, graph.NodeData{AgentName: "Lead", Tools: &graph.Tools{Subagents: true}}).
		node("kid", graph.TypeAgent, graph.NodeData{AgentName: "Kid", SystemPrompt: "kid"}).
		edge("s", "output", "lead").edge("lead", "subagent", "kid")
	return &b.g
}

// TestAgentLoopResumesFromItsLog: a process dies right after the results
// of the lead's third tool turn are durable; the process that takes the
// run over continues the lead's conversation from the log. No finished
// call runs again: each job reaches the kid exactly once, and the lead's
// answer holds all five results.
func TestAgentLoopResumesFromItsLog(t *testing.T) {
	ctx := context.Background()
	script := &jobsScript{n: 5, kid: map[string]int{}}
	fake := fakeopenai.StartT(t, fakeopenai.WithHandler(script.handle))
	h := &durHarness{t: t, path: t.TempDir() + "/switchyard.db", fake: fake}

	stA := &crashStore{Store: h.openStore()}
	var results atomic.Int32
	var armed atomic.Bool
	stA.setDieAfterEvent(func(ev *engine.Event) bool {
		if ev.Type == engine.EvToolResult && ev.NodeID == "lead" && !strings.Contains(ev.Content, "error") {
			if results.Add(1) == 3 {
				armed.Store(true)
			}
		}
		return false
	})
	stA.setDieAfterOp(func(op string) bool { return op == "checkpoint" && armed.Load() })
	a := processWithLLM(t, h, "A", stA, &stA.dead)
	run, err := a.StartGraph(ctx, leadGraph(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "process A dead after the third turn's results", func() bool { return stA.dead.Load() })
	a.Close()

	stB := h.openStore()
	b := processWithLLM(t, h, "B", stB, nil)
	eventually(t, "the run taken over", func() bool {
		took, _ := b.Recover(ctx, true)
		return len(took) == 1
	})
	r := waitDone(t, b, run.ID)
	if r.Status != engine.StatusCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	for k := 1; k <= 5; k++ {
		if n := script.kidCalls()[fmt.Sprintf("job-%d", k)]; n != 1 {
			t.Errorf("job-%d reached the kid %d times, want once: %v", k, n, script.kidCalls())
		}
	}
	s := loadStored(t, stB, run.ID)
	out := s.nodes["lead"].Output
	if out != "all done: did job-1, did job-2, did job-3, did job-4, did job-5" {
		t.Errorf("lead output %q", out)
	}
	s.checkLog(t)
	// Every call and result is logged once: the log is the transcript.
	calls, res := 0, 0
	for _, ev := range s.events {
		if ev.NodeID != "lead" {
			continue
		}
		switch ev.Type {
		case engine.EvToolCall:
			calls++
		case engine.EvToolResult:
			res++
		}
	}
	if calls != 5 || res != 5 {
		t.Errorf("lead logged %d tool calls and %d results, want 5 and 5", calls, res)
	}
}

// processWithLLM is durHarness.process with a short lease, so a takeover
// after the emulated death does not wait long; once dead is set, the
// process reaches the LLM no more either (a killed process makes no calls).
func processWithLLM(t *testing.T, h *durHarness, tag string, st engine.Store, dead *atomic.Bool) *engine.Engine {
	t.Helper()
	client, err := llm.New(llm.Config{BaseURL: h.fake.URL(), APIKey: "test", RetryBase: 10 * time.Millisecond, MaxAttempts: 1,
		HTTPClient: &http.Client{Transport: deadTransport{dead}}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Store: st, LLM: client, Owner: tag, LeaseTTL: 300 * time.Millisecond,
		ArtifactsRoot: t.TempDir(), WorkspaceRoot: t.TempDir(), Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// deadTransport refuses every request once its process is dead.
type deadTransport struct{ dead *atomic.Bool }

func (d deadTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if d.dead != nil && d.dead.Load() {
		return nil, errors.New("emulated process death")
	}
	return http.DefaultTransport.RoundTrip(req)
}

func approveLeadGraph() *graph.Graph {
	g := leadGraph()
	for i := range g.Nodes {
		if g.Nodes[i].ID == "lead" {
			g.Nodes[i].Data.Tools.Approve = []string{"subagent_*"}
		}
	}
	return g
}

// pendingTool waits until the run is paused on the tool call callID and
// returns it.
func pendingTool(t *testing.T, st engine.Store, runID, callID string) *engine.ToolApproval {
	t.Helper()
	var ta *engine.ToolApproval
	eventually(t, "tool call "+callID+" waiting", func() bool {
		r, err := st.GetRun(context.Background(), runID)
		if err != nil || r.Status != engine.StatusPaused || len(r.PendingApprovals) != 1 {
			return false
		}
		ta = r.PendingApprovals[0].Tool
		return ta != nil && ta.CallID == callID
	})
	return ta
}

// TestToolApprovalSurvivesRestart: the lead's call of its subagent waits
// for a reviewer before it runs; the wait survives a restart, is answered
// in another process, and the approved call runs exactly once; a rejected
// call reaches the model as its result, with the reviewer's note, and the
// loop goes on.
func TestToolApprovalSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	script := &jobsScript{n: 2, kid: map[string]int{}}
	fake := fakeopenai.StartT(t, fakeopenai.WithHandler(script.handle))
	h := &durHarness{t: t, path: t.TempDir() + "/switchyard.db", fake: fake}
	stA := h.openStore()
	a := processWithLLM(t, h, "A", stA, nil)
	run, err := a.StartGraph(ctx, approveLeadGraph(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ta := pendingTool(t, stA, run.ID, "call_1")
	if ta.Tool != "subagent_kid_kid" || string(ta.Arguments) != `{"input":"job-1"}` {
		t.Fatalf("waiting call %+v", ta)
	}
	if n := len(script.kidCalls()); n != 0 {
		t.Fatalf("the kid ran before the approval: %v", script.kidCalls())
	}
	a.Close()

	stB := h.openStore()
	b := processWithLLM(t, h, "B", stB, nil)
	if _, err := b.Resume(ctx, run.ID, "lead", engine.Decision{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	pendingTool(t, stB, run.ID, "call_2")
	if _, err := b.Resume(ctx, run.ID, "lead", engine.Decision{Decision: "reject", Note: "not job 2"}); err != nil {
		t.Fatal(err)
	}
	r := waitDone(t, b, run.ID)
	if r.Status != engine.StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if got := script.kidCalls(); got["job-1"] != 1 || got["job-2"] != 0 {
		t.Errorf("kid calls %v: want job-1 once (approved), job-2 never (rejected)", got)
	}
	s := loadStored(t, stB, run.ID)
	if want := "all done: did job-1, denied by the reviewer: not job 2"; s.nodes["lead"].Output != want {
		t.Errorf("lead output %q, want %q", s.nodes["lead"].Output, want)
	}
	s.checkLog(t)
}

// TestToolApprovalClaimedThenCrash: the process that claimed the approval
// dies before the call runs; the one that takes over runs it, once.
func TestToolApprovalClaimedThenCrash(t *testing.T) {
	ctx := context.Background()
	script := &jobsScript{n: 1, kid: map[string]int{}}
	fake := fakeopenai.StartT(t, fakeopenai.WithHandler(script.handle))
	h := &durHarness{t: t, path: t.TempDir() + "/switchyard.db", fake: fake}
	stA := &crashStore{Store: h.openStore()}
	a := processWithLLM(t, h, "A", stA, &stA.dead)
	run, err := a.StartGraph(ctx, approveLeadGraph(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pendingTool(t, stA, run.ID, "call_1")
	stA.setDieAfterOp(func(op string) bool { return op == "claim" })
	_, _ = a.Resume(ctx, run.ID, "lead", engine.Decision{Decision: "approve"})
	eventually(t, "A to die", stA.dead.Load)
	a.Close()

	stB := h.openStore()
	b := processWithLLM(t, h, "B", stB, nil)
	eventually(t, "the run taken over", func() bool {
		took, _ := b.Recover(ctx, true)
		return len(took) == 1
	})
	r := waitDone(t, b, run.ID)
	if r.Status != engine.StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if got := script.kidCalls(); got["job-1"] != 1 {
		t.Errorf("kid calls %v: the approved call must run exactly once", got)
	}
	s := loadStored(t, stB, run.ID)
	if s.nodes["lead"].Output != "all done: did job-1" {
		t.Errorf("lead output %q", s.nodes["lead"].Output)
	}
}

// TestToolApprovalRace: ten answers to one waiting tool call, one winner.
func TestToolApprovalRace(t *testing.T) {
	ctx := context.Background()
	script := &jobsScript{n: 1, kid: map[string]int{}}
	fake := fakeopenai.StartT(t, fakeopenai.WithHandler(script.handle))
	h := &durHarness{t: t, path: t.TempDir() + "/switchyard.db", fake: fake}
	stA, stB := h.openStore(), h.openStore()
	a := processWithLLM(t, h, "A", stA, nil)
	b := processWithLLM(t, h, "B", stB, nil)
	run, err := a.StartGraph(ctx, approveLeadGraph(), engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pendingTool(t, stA, run.ID, "call_1")
	waitDone(t, a, run.ID)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := a
			if i%2 == 1 {
				e = b
			}
			if _, err := e.Resume(ctx, run.ID, "lead", engine.Decision{Decision: "approve"}); err == nil {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d answers won, want exactly 1", wins.Load())
	}
	eventually(t, "run completed", func() bool {
		r, _ := stA.GetRun(ctx, run.ID)
		return r != nil && r.Status == engine.StatusCompleted
	})
	if got := script.kidCalls(); got["job-1"] != 1 {
		t.Errorf("kid calls %v", got)
	}
}
