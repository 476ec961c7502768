package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
)

func subGraph() *graph.Graph {
	return (&gb{}).node("s", "start", graph.NodeData{InitialInput: "q"}).
		node("lead", "agent", graph.NodeData{AgentName: "Lead", Tools: &graph.Tools{Subagents: true}}).
		node("kid", "agent", graph.NodeData{AgentName: "Kid", SystemPrompt: "kid"}).
		edge("s", "output", "lead").edge("lead", "subagent", "kid").build()
}

func TestAgentTurnCap(t *testing.T) {
	e, _ := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		if req.HasTool("subagent_kid_kid") { // the lead never stops calling its tool
			return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "subagent_kid_kid", Arguments: `{"input":"again"}`}}}
		}
		return fakeopenai.Reply{Text: "kid says hi"}
	})
	run, _ := e.StartGraph(context.Background(), subGraph(), StartOptions{})
	r := waitRun(t, e, run.ID)
	if r.Status != StatusFailed || !strings.Contains(r.Error, "turn limit") {
		t.Fatalf("%s %q", r.Status, r.Error)
	}
	leadCalls := 0
	for _, req := range srv.Requests() {
		if req.HasTool("subagent_kid_kid") {
			leadCalls++
		}
	}
	if leadCalls != DefaultMaxTurns {
		t.Errorf("lead made %d model calls, want %d", leadCalls, DefaultMaxTurns)
	}
}

func TestSubagentErrorIsReportedToParent(t *testing.T) {
	e, rec := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		if req.HasTool("subagent_kid_kid") {
			if res := req.ToolResults(); len(res) > 0 {
				return fakeopenai.Reply{Text: "lead saw: " + res[0].Content}
			}
			return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "subagent_kid_kid", Arguments: `{"input":"x"}`}}}
		}
		return fakeopenai.Reply{Status: 401} // the kid's call fails for good
	})
	run, _ := e.StartGraph(context.Background(), subGraph(), StartOptions{})
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if errs := rec.ofType(run.ID, EvSubagentCallError); len(errs) != 1 || !strings.Contains(errs[0].Content, `"depth":1`) {
		t.Fatalf("subagent_call_error events %+v", errs)
	}
	if out := nodeStates(t, e, run.ID)["lead"].Output; !strings.HasPrefix(out, "lead saw: error: ") {
		t.Errorf("lead output %q", out)
	}
}

func TestSubagentsOverResponsesAPI(t *testing.T) {
	srv := fakeopenai.StartT(t)
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k", Responses: true, RetryBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e, rec := newTestEngine(t, Config{LLM: client})
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		if req.HasTool("subagent_kid_kid") {
			if res := req.ToolResults(); len(res) > 0 {
				// Streamed slowly enough to be logged as llm_delta events.
				return fakeopenai.Reply{Chunks: []string{"final ", "[" + res[0].Content + "]"}, ChunkDelay: 200 * time.Millisecond}
			}
			return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "subagent_kid_kid", Arguments: `{"input":"hello kid"}`}}}
		}
		return fakeopenai.DefaultReply(req)
	})
	run, _ := e.StartGraph(context.Background(), subGraph(), StartOptions{})
	if r := waitRun(t, e, run.ID); r.Status != StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if out := nodeStates(t, e, run.ID)["lead"].Output; out != "final [echo: hello kid]" {
		t.Errorf("output %q", out)
	}
	for _, req := range srv.Requests() {
		if req.API != fakeopenai.APIResponses {
			t.Errorf("request went to %s", req.API)
		}
	}
	if len(rec.ofType(run.ID, EvLLMDelta)) == 0 {
		t.Errorf("no streamed deltas over the Responses API")
	}
}
