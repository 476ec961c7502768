package engine

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
)

// responseUsage decodes the llm_response events' data of a run, by node.
func responseUsage(t *testing.T, rec *recorder, runID string) map[string]llmResponseData {
	t.Helper()
	out := map[string]llmResponseData{}
	for _, ev := range rec.ofType(runID, EvLLMResponse) {
		var d llmResponseData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatalf("llm_response data %s: %v", ev.Data, err)
		}
		out[ev.NodeID] = d
	}
	return out
}

func sameUsage(a, b Usage) bool {
	if a.PromptTokens != b.PromptTokens || a.CompletionTokens != b.CompletionTokens || a.TotalTokens != b.TotalTokens {
		return false
	}
	if (a.CostUSD == nil) != (b.CostUSD == nil) {
		return false
	}
	return a.CostUSD == nil || math.Abs(*a.CostUSD-*b.CostUSD) < 1e-12
}

func TestAgentUsageInLLMResponseAndRun(t *testing.T) {
	e, rec := newLLMEngine(t, Config{}, fakeopenai.WithHandler(fakeopenai.DemoReply))
	srv := testFake[t.Name()]
	g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "count my tokens please"}).
		node("a", "agent", agent("A")).node("b", "agent", graph.NodeData{AgentName: "B", Model: "gpt-4o"}).
		edge("s", "output", "a").edge("a", "output", "b").build()
	run, err := e.StartGraph(context.Background(), g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	if r.Status != StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	// The client asked for usage on its streams.
	for _, req := range srv.Requests() {
		if !req.Stream || !req.IncludeUsage {
			t.Errorf("request %d: stream %v include_usage %v", req.Seq, req.Stream, req.IncludeUsage)
		}
	}
	data := responseUsage(t, rec, run.ID)
	var sum Usage
	for _, id := range []string{"a", "b"} {
		d := data[id]
		if d.Usage == nil || d.Usage.PromptTokens <= 0 || d.Usage.CompletionTokens <= 0 ||
			d.Usage.TotalTokens != d.Usage.PromptTokens+d.Usage.CompletionTokens || d.Usage.CostUSD != nil {
			t.Fatalf("node %s: llm_response data %+v", id, d)
		}
		sum = sum.Add(*d.Usage)
	}
	if data["a"].Model != llm.DefaultModel || data["b"].Model != "gpt-4o" {
		t.Errorf("models %q %q", data["a"].Model, data["b"].Model)
	}
	if !sameUsage(r.Usage, sum) {
		t.Errorf("run usage %+v, want the sum of llm_response usage %+v", r.Usage, sum)
	}
	// The header as stored, not just the live one.
	stored, err := e.store.GetRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !sameUsage(stored.Usage, sum) {
		t.Errorf("stored usage %+v, want %+v", stored.Usage, sum)
	}
}

func TestDemoFakeDelegatesToSubagent(t *testing.T) {
	prices := llm.Prices{llm.DefaultModel: {Input: 0.25, Output: 2}}
	e, rec := newLLMEngine(t, Config{Prices: prices}, fakeopenai.WithHandler(fakeopenai.DemoReply))
	srv := testFake[t.Name()]
	g := subGraph()
	g.Nodes[0].Data.InitialInput = "delegate: write a haiku"
	run, err := e.StartGraph(context.Background(), g, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, e, run.ID)
	if r.Status != StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	starts, ends := rec.ofType(run.ID, EvSubagentCallStart), rec.ofType(run.ID, EvSubagentCallEnd)
	if len(starts) != 1 || len(ends) != 1 {
		t.Fatalf("subagent events: %d starts, %d ends", len(starts), len(ends))
	}
	var end subagentEvent
	if err := json.Unmarshal([]byte(ends[0].Content), &end); err != nil {
		t.Fatal(err)
	}
	if end.SubagentNodeID != "kid" || end.Message != "echo: delegate: write a haiku" {
		t.Errorf("subagent_call_end %+v", end)
	}
	want := "echo: delegate: write a haiku\nsubagent_kid_kid: echo: delegate: write a haiku"
	if out := nodeStates(t, e, run.ID)["lead"].Output; out != want {
		t.Errorf("lead output %q, want %q", out, want)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d model calls, want 3 (lead, kid, lead)", n)
	}
	// The lead's llm_response counts all three calls, priced.
	d := responseUsage(t, rec, run.ID)["lead"]
	if d.Usage == nil || d.Usage.CostUSD == nil {
		t.Fatalf("lead llm_response data %+v", d)
	}
	u := *d.Usage
	wantCost := (float64(u.PromptTokens)*0.25 + float64(u.CompletionTokens)*2) / 1e6
	if math.Abs(*u.CostUSD-wantCost) > 1e-12 {
		t.Errorf("cost %v, want %v", *u.CostUSD, wantCost)
	}
	var calls int64
	for _, req := range srv.Requests() {
		calls += int64(len(req.Messages))
	}
	if u.PromptTokens < calls*4 { // the fake counts 4+ tokens per message
		t.Errorf("prompt tokens %d for %d messages over three calls", u.PromptTokens, calls)
	}
	if !sameUsage(r.Usage, u) {
		t.Errorf("run usage %+v, want %+v", r.Usage, u)
	}
	// subagent_call_end data: what the one kid call cost, priced too.
	var sd subagentData
	if err := json.Unmarshal(ends[0].Data, &sd); err != nil || sd.Usage == nil || sd.Usage.CostUSD == nil {
		t.Fatalf("subagent_call_end data %s (%v)", ends[0].Data, err)
	}
	if k := sd.Usage; k.TotalTokens <= 0 || k.TotalTokens >= u.TotalTokens || k.TotalTokens != k.PromptTokens+k.CompletionTokens {
		t.Errorf("kid usage %+v, lead (with kid) %+v", *k, u)
	}
}

func TestYAMLPromptUsage(t *testing.T) {
	e, rec, _ := yamlLLMEngine(t)
	run, _ := runYAMLT(t, e, wf(`
  - id: ask
    model: gpt-4o-mini
    prompt: "Summarize: $ARGUMENTS"
`), "the input")
	if run.Status != StatusCompleted {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	evs := eventsOf(rec, run.ID, "ask", EvLLMResponse)
	if len(evs) != 1 {
		t.Fatalf("%d llm_response events", len(evs))
	}
	var d llmResponseData
	if err := json.Unmarshal(evs[0].Data, &d); err != nil || d.Usage == nil || d.Model != "gpt-4o-mini" {
		t.Fatalf("data %s (%v)", evs[0].Data, err)
	}
	if !sameUsage(run.Usage, *d.Usage) || run.Usage.TotalTokens <= 0 {
		t.Errorf("run usage %+v, event usage %+v", run.Usage, *d.Usage)
	}
	if strings.Contains(string(evs[0].Data), "costUsd") {
		t.Errorf("cost without a price table: %s", evs[0].Data)
	}
}
