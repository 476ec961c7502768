package engine

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
)

func agent(name string) graph.NodeData { return graph.NodeData{AgentName: name} }

func TestParallelBranchesRunConcurrently(t *testing.T) {
	const latency = 300 * time.Millisecond
	e, rec := newLLMEngine(t, Config{}, fakeopenai.WithLatency(latency))
	srv := testFake[t.Name()]
	g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "go"}).
		node("a", "agent", agent("A")).node("b", "agent", agent("B")).node("c", "agent", agent("C")).
		node("join", "agent", agent("Join")).
		edge("s", "output", "a").edge("s", "output", "b").edge("s", "output", "c").
		edge("a", "output", "join").edge("b", "output", "join").edge("c", "output", "join").build()
	start := time.Now()
	run, err := e.StartGraph(context.Background(), g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	elapsed := time.Since(start)
	if r.Status != StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if mc := srv.MaxConcurrent(); mc < 3 {
		t.Errorf("max concurrent LLM requests %d, want 3: branches ran one after another", mc)
	}
	// Two LLM latencies (branches, then join) plus overhead; sequential
	// branches would need four. Loose bound for a busy machine.
	if elapsed > 4*latency-50*time.Millisecond {
		t.Errorf("run took %v; parallel branches should take about %v", elapsed, 2*latency)
	}
	ns := nodeStates(t, e, run.ID)
	if want := "echo: go\n\necho: go\n\necho: go"; ns["join"].Input != want {
		t.Errorf("join input %q", ns["join"].Input)
	}
	checkSeq(t, rec.events(run.ID))
}

func TestAgentPromptAndVariables(t *testing.T) {
	e, rec := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "ignored"}).
		node("json", "agent", graph.NodeData{AgentName: "Emitter"}).
		node("w", "agent", graph.NodeData{AgentName: "Writer", SystemPrompt: "You are $WORKFLOW_ID's writer.",
			UserPrompt: "Prev={{PREVIOUS_OUTPUT}} args=$ARGUMENTS start=$s.output title=$json.output.title n=$json.output.n " +
				"missing=[$nope.output] rej=[$REJECTION_REASON] home=$HOME",
			Model: "gpt-test", ReasoningEffort: "low"}).
		edge("s", "output", "json").edge("json", "output", "w").build()
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		if strings.Contains(req.LastUserMessage(), "Prev=") {
			return fakeopenai.DefaultReply(req)
		}
		return fakeopenai.Reply{Text: `{"title":"Trains","n":3}`}
	})
	run, err := e.StartGraph(context.Background(), g, StartOptions{Input: "the input"})
	if err != nil {
		t.Fatal(err)
	}
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	last, _ := srv.LastRequest()
	wantUser := `Prev={"title":"Trains","n":3} args=the input start=the input title=Trains n=3 missing=[] rej=[] home=$HOME`
	if got := last.LastUserMessage(); got != wantUser {
		t.Errorf("user content\n got %q\nwant %q", got, wantUser)
	}
	if len(last.Messages) == 0 || last.Messages[0].Role != "system" || last.Messages[0].Content != "You are "+run.ID+"'s writer." {
		t.Errorf("system message %+v", last.Messages)
	}
	if last.Model != "gpt-test" || last.ReasoningEffort != "low" || !last.Stream {
		t.Errorf("model %q effort %q stream %v", last.Model, last.ReasoningEffort, last.Stream)
	}
	first := srv.Requests()[0]
	if first.Messages[0].Content != DefaultSystemPrompt || first.LastUserMessage() != "the input" || first.Model != llm.DefaultModel {
		t.Errorf("defaults: %+v", first.Messages)
	}
	var sawWarning, sawPrompt bool
	for _, ev := range rec.events(run.ID) {
		if ev.Type == EvWarning && ev.NodeID == "w" && strings.Contains(ev.Content, "nope") {
			sawWarning = true
		}
		if ev.Type == EvStartPrompt && ev.NodeID == "w" && ev.Content == wantUser {
			sawPrompt = true
		}
	}
	if !sawWarning || !sawPrompt {
		t.Errorf("warning %v start_prompt %v", sawWarning, sawPrompt)
	}
}

func TestFieldOfNonJSONOutputFailsNode(t *testing.T) {
	e, rec := newLLMEngine(t, Config{})
	g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "plain text"}).
		node("w", "agent", graph.NodeData{UserPrompt: "x=$s.output.title"}).edge("s", "output", "w").build()
	run, _ := e.StartGraph(context.Background(), g, StartOptions{})
	r := waitRun(t, e, run.ID)
	if r.Status != StatusFailed || !strings.Contains(r.Error, "$s.output.title") || !strings.Contains(r.Error, "not a JSON object") {
		t.Fatalf("%s %q", r.Status, r.Error)
	}
	if len(rec.ofType(run.ID, EvError)) == 0 {
		t.Error("no error event")
	}
}

func TestArtifactsDirCreatedOnUse(t *testing.T) {
	root := t.TempDir()
	e, _ := newLLMEngine(t, Config{ArtifactsRoot: root})
	g := (&gb{}).node("s", "start", graph.NodeData{}).
		node("w", "agent", graph.NodeData{UserPrompt: "save to $ARTIFACTS_DIR"}).edge("s", "output", "w").build()
	run, _ := e.StartGraph(context.Background(), g, StartOptions{})
	waitRun(t, e, run.ID)
	ns := nodeStates(t, e, run.ID)
	dir := root + "/" + run.ID
	if ns["w"].Output != "echo: save to "+dir {
		t.Fatalf("output %q", ns["w"].Output)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("artifacts dir: %v", err)
	}
}

func TestStreamingDeltasAreCoalesced(t *testing.T) {
	e, rec := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	chunks := make([]string, 40)
	for i := range chunks {
		chunks[i] = "w" + strings.Repeat("o", i%3) + " "
	}
	srv.Enqueue(fakeopenai.Reply{Chunks: chunks, ChunkDelay: 10 * time.Millisecond})
	g := (&gb{}).node("s", "start", graph.NodeData{}).node("w", "agent", agent("W")).edge("s", "output", "w").build()
	run, _ := e.StartGraph(context.Background(), g, StartOptions{})
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatal(r.Status, r.Error)
	}
	deltas := rec.ofType(run.ID, EvLLMDelta)
	var joined strings.Builder
	for _, d := range deltas {
		joined.WriteString(d.Content)
	}
	full := strings.Join(chunks, "")
	if joined.String() != full {
		t.Fatalf("deltas %q != %q", joined.String(), full)
	}
	// ~400ms of streaming at <=10 events/s: far fewer events than chunks.
	if len(deltas) < 2 || len(deltas) > 12 {
		t.Errorf("%d llm_delta events for %d chunks", len(deltas), len(chunks))
	}
	if resp := rec.ofType(run.ID, EvLLMResponse); len(resp) != 1 || resp[0].Content != full {
		t.Errorf("llm_response %+v", resp)
	}
}

// TestInstantReplyLogsNoDelta: a reply that arrives whole before the first
// llm_delta is due is logged once, as the llm_response (the delta would
// repeat it); one that arrives more slowly still streams, and a call that
// fails keeps the text it streamed.
func TestInstantReplyLogsNoDelta(t *testing.T) {
	g := (&gb{}).node("s", "start", graph.NodeData{}).node("w", "agent", agent("W")).edge("s", "output", "w").build()
	cases := []struct {
		name       string
		firstDelta time.Duration // how long the first text is held back
		reply      fakeopenai.Reply
		wantDeltas bool
	}{
		// Held back longer than the reply takes, on any machine.
		{"instant", time.Minute, fakeopenai.Reply{Chunks: []string{"all ", "at ", "once"}}, false},
		{"slow", 0, fakeopenai.Reply{Chunks: []string{"first ", "then ", "more"}, ChunkDelay: 200 * time.Millisecond}, true},
		// Cut off after its first text, then answered in full by the retry:
		// the text streamed before the cut stays in the log.
		{"cut off", time.Minute, fakeopenai.Reply{Chunks: []string{"partial ", "text ", "lost"}, TruncateStream: true, TruncateAfter: 2}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, rec := newLLMEngine(t, Config{})
			e.firstDelta = c.firstDelta
			testFake[t.Name()].Enqueue(c.reply)
			run, err := e.StartGraph(context.Background(), g, StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
				t.Fatal(r.Status, r.Error)
			}
			var streamed strings.Builder
			for _, d := range rec.ofType(run.ID, EvLLMDelta) {
				streamed.WriteString(d.Content)
			}
			full := strings.Join(c.reply.Chunks, "")
			resp := rec.ofType(run.ID, EvLLMResponse)
			switch {
			case !c.wantDeltas:
				if streamed.Len() != 0 {
					t.Errorf("llm_delta %q logged for an instant reply", streamed.String())
				}
			case c.reply.TruncateStream:
				if !strings.HasPrefix(streamed.String(), "partial ") || len(resp) != 1 ||
					!strings.HasSuffix(streamed.String(), resp[0].Content) {
					t.Errorf("streamed %q, then llm_response %+v", streamed.String(), resp)
				}
				return
			case streamed.String() != full:
				t.Errorf("streamed %q, want %q", streamed.String(), full)
			}
			if len(resp) != 1 || resp[0].Content != full {
				t.Errorf("llm_response %+v, want one with %q", resp, full)
			}
		})
	}
}

func TestSubagentsNestedThreeDeep(t *testing.T) {
	e, rec := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	// Each agent with a subagent tool calls it once, then answers with the
	// tool's result wrapped in its own name.
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		sys := ""
		if len(req.Messages) > 0 {
			sys = req.Messages[0].Content
		}
		if res := req.ToolResults(); len(res) > 0 {
			return fakeopenai.Reply{Text: sys + "(" + res[0].Content + ")"}
		}
		for _, tl := range req.Tools {
			if tl.Type == "function" {
				return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: tl.Name, Arguments: `{"input":"ask ` + sys + `"}`}}}
			}
		}
		return fakeopenai.Reply{Text: sys + "[" + req.LastUserMessage() + "]"}
	})
	sub := func(name string) graph.NodeData {
		return graph.NodeData{AgentName: name, SystemPrompt: name, Tools: &graph.Tools{Subagents: true}}
	}
	g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "plan"}).
		node("lead", "agent", sub("Lead")).node("c1", "agent", sub("Child One")).
		node("c2", "agent", sub("Child Two")).node("c3", "agent", graph.NodeData{AgentName: "Leaf", SystemPrompt: "Leaf"}).
		edge("s", "output", "lead").edge("lead", "subagent", "c1").edge("c1", "subagent", "c2").edge("c2", "subagent", "c3").build()
	run, err := e.StartGraph(context.Background(), g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	ns := nodeStates(t, e, run.ID)
	if want := "Lead(Child One(Child Two(Leaf[ask Child Two])))"; ns["lead"].Output != want {
		t.Errorf("output %q, want %q", ns["lead"].Output, want)
	}
	for _, id := range []string{"c1", "c2", "c3"} {
		if st, ok := ns[id]; ok && st.Status != NodeIdle {
			t.Errorf("subagent %s ran on its own: %q", id, ns[id].Status)
		}
	}
	starts := rec.ofType(run.ID, EvSubagentCallStart)
	ends := rec.ofType(run.ID, EvSubagentCallEnd)
	if len(starts) != 3 || len(ends) != 3 {
		t.Fatalf("%d starts %d ends", len(starts), len(ends))
	}
	var evs []subagentEvent
	for _, s := range starts {
		var se subagentEvent
		if err := json.Unmarshal([]byte(s.Content), &se); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, se)
	}
	if evs[0].Depth != 1 || evs[1].Depth != 2 || evs[2].Depth != 3 ||
		evs[0].ParentCallID != "" || evs[1].ParentCallID != evs[0].CallID || evs[2].ParentCallID != evs[1].CallID ||
		evs[2].SubagentNodeID != "c3" || evs[2].SubagentName != "Leaf" || evs[0].ParentNodeID != "lead" {
		t.Errorf("subagent events %+v", evs)
	}
	// The tool the lead saw is named after the child.
	req := srv.Requests()[0]
	if !req.HasTool("subagent_child_one_c1") {
		t.Errorf("tools %+v", req.Tools)
	}
}

func TestToolCallsOfOneResponseRunConcurrently(t *testing.T) {
	e, _ := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		if len(req.ToolResults()) == 2 {
			return fakeopenai.Reply{Text: "both done"}
		}
		if req.HasTool("subagent_a_a") {
			return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{
				{Name: "subagent_a_a", Arguments: `{"input":"1"}`}, {Name: "subagent_b_b", Arguments: `{"input":"2"}`}}}
		}
		return fakeopenai.Reply{Text: "child", Latency: 300 * time.Millisecond}
	})
	g := (&gb{}).node("s", "start", graph.NodeData{}).
		node("lead", "agent", graph.NodeData{AgentName: "Lead", Tools: &graph.Tools{Subagents: true}}).
		node("a", "agent", agent("A")).node("b", "agent", agent("B")).
		edge("s", "output", "lead").edge("lead", "subagent", "a").edge("lead", "subagent", "b").build()
	run, _ := e.StartGraph(context.Background(), g, StartOptions{})
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatal(r.Status, r.Error)
	}
	if srv.MaxConcurrent() < 2 {
		t.Errorf("tool calls ran one after another (max concurrency %d)", srv.MaxConcurrent())
	}
}

func TestLLMRetriesTransientErrors(t *testing.T) {
	e, rec := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	srv.Enqueue(fakeopenai.Reply{Status: 429}, fakeopenai.Reply{Status: 500}, fakeopenai.Reply{TruncateStream: true}, fakeopenai.Reply{Text: "finally"})
	g := (&gb{}).node("s", "start", graph.NodeData{}).node("w", "agent", agent("W")).edge("s", "output", "w").build()
	run, _ := e.StartGraph(context.Background(), g, StartOptions{})
	r := waitRun(t, e, run.ID)
	if r.Status != StatusCompleted || nodeStates(t, e, run.ID)["w"].Output != "finally" {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if n := len(rec.ofType(run.ID, EvLLMError)); n != 3 {
		t.Errorf("%d llm_error events, want 3", n)
	}
}

func TestLLMAuthErrorIsNotRetried(t *testing.T) {
	e, rec := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	srv.Enqueue(fakeopenai.Reply{Status: 401})
	g := (&gb{}).node("s", "start", graph.NodeData{}).node("w", "agent", agent("W")).edge("s", "output", "w").build()
	run, _ := e.StartGraph(context.Background(), g, StartOptions{})
	r := waitRun(t, e, run.ID)
	if r.Status != StatusFailed || !strings.Contains(r.Error, "401") {
		t.Fatalf("%s %q", r.Status, r.Error)
	}
	if n := srv.TotalRequests(); n != 1 {
		t.Errorf("%d requests for an auth error, want 1", n)
	}
	if len(rec.ofType(run.ID, EvLLMError)) != 1 {
		t.Errorf("llm_error events: %+v", rec.ofType(run.ID, EvLLMError))
	}
}

func TestFailFastCancelsRunningSiblings(t *testing.T) {
	e, _ := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		if strings.Contains(req.LastUserMessage(), "bad") {
			return fakeopenai.Reply{Status: 400, Latency: 100 * time.Millisecond}
		}
		return fakeopenai.Reply{Hang: true}
	})
	g := (&gb{}).node("s", "start", graph.NodeData{}).
		node("bad", "agent", graph.NodeData{AgentName: "Bad", UserPrompt: "bad"}).
		node("slow", "agent", graph.NodeData{AgentName: "Slow", UserPrompt: "slow"}).
		node("after", "agent", agent("After")).
		edge("s", "output", "bad").edge("s", "output", "slow").edge("slow", "output", "after").build()
	start := time.Now()
	run, _ := e.StartGraph(context.Background(), g, StartOptions{})
	r := waitRun(t, e, run.ID)
	if r.Status != StatusFailed || !strings.Contains(r.Error, `"bad" (Bad)`) {
		t.Fatalf("%s %q", r.Status, r.Error)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("fail-fast took %v", time.Since(start))
	}
	ns := nodeStates(t, e, run.ID)
	// A failed run leaves nothing undecided: what never ran is skipped.
	if ns["after"].Status != NodeSkipped || ns["slow"].Status != NodeFailed {
		t.Errorf("after %q slow %q", ns["after"].Status, ns["slow"].Status)
	}
	waitFor(t, func() bool { return srv.InFlight() == 0 }, "hung LLM request aborted")
}

func TestCancelAbortsInFlightLLMCall(t *testing.T) {
	e, rec := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	srv.SetHandler(func(*fakeopenai.Request) fakeopenai.Reply { return fakeopenai.Reply{Hang: true} })
	g := (&gb{}).node("s", "start", graph.NodeData{}).node("w", "agent", agent("W")).edge("s", "output", "w").build()
	ctx := context.Background()
	run, _ := e.StartGraph(ctx, g, StartOptions{})
	waitFor(t, func() bool { return srv.InFlight() == 1 }, "LLM request in flight")
	start := time.Now()
	if _, err := e.Cancel(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	if r.Status != StatusCancelled {
		t.Fatalf("%s", r.Status)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cancel took %v, want under 1s", d)
	}
	waitFor(t, func() bool { return srv.InFlight() == 0 }, "LLM request aborted")
	checkSeq(t, rec.events(run.ID))
}

func TestNoLLMConfigured(t *testing.T) {
	e, _ := newTestEngine(t, Config{})
	g := (&gb{}).node("s", "start", graph.NodeData{}).node("w", "agent", agent("W")).edge("s", "output", "w").build()
	run, _ := e.StartGraph(context.Background(), g, StartOptions{})
	r := waitRun(t, e, run.ID)
	if r.Status != StatusFailed || !strings.Contains(r.Error, "no LLM configured: set OPENAI_API_KEY or OPENAI_BASE_URL") {
		t.Fatalf("%s %q", r.Status, r.Error)
	}
	// A graph without agents runs without an LLM.
	g2 := (&gb{}).node("s", "start", graph.NodeData{}).
		node("c", "if", graph.NodeData{Conditions: []graph.Condition{cond("equal", "x")}}).
		node("a", "approval", graph.NodeData{}).
		edge("s", "output", "c").edge("c", "false", "a").edge("a", "approve", "c").build()
	run2, err := e.StartGraph(context.Background(), g2, StartOptions{Input: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if r := waitRun(t, e, run2.ID); r.Status != StatusPaused {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	e.Resume(context.Background(), run2.ID, "a", Decision{Decision: "reject"})
	if r := waitRun(t, e, run2.ID); r.Status != StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
}

func TestWebSearchUsesResponsesAPI(t *testing.T) {
	e, _ := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	srv.Enqueue(fakeopenai.Reply{Text: "found it", WebSearch: []string{"lisbon food"}})
	g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "where to eat"}).
		node("w", "agent", graph.NodeData{AgentName: "Scout", SystemPrompt: "Find food.", ReasoningEffort: "high",
			Tools: &graph.Tools{WebSearch: true}}).edge("s", "output", "w").build()
	run, _ := e.StartGraph(context.Background(), g, StartOptions{})
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatal(r.Status, r.Error)
	}
	req, _ := srv.LastRequest()
	if req.API != fakeopenai.APIResponses || !req.HasWebSearch() || req.ReasoningEffort != "high" || req.Instructions != "Find food." {
		t.Errorf("request %+v", req)
	}
	if out := nodeStates(t, e, run.ID)["w"].Output; out != "found it" {
		t.Errorf("output %q", out)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
