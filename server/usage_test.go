package server

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/llm"
)

type usageJSON struct {
	PromptTokens     int64    `json:"promptTokens"`
	CompletionTokens int64    `json:"completionTokens"`
	TotalTokens      int64    `json:"totalTokens"`
	CostUSD          *float64 `json:"costUsd"`
}

// eventUsage sums the usage of a run's llm_response events, as the UI
// would per node.
func eventUsage(v *env, runID string) (sum usageJSON, perNode map[string]usageJSON) {
	var evs []engine.Event
	v.must(200, "GET", "/api/runs/"+runID+"/events", nil, &evs)
	perNode = map[string]usageJSON{}
	for _, ev := range evs {
		if ev.Type != engine.EvLLMResponse {
			continue
		}
		var d struct {
			Model string     `json:"model"`
			Usage *usageJSON `json:"usage"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil || d.Usage == nil || d.Model == "" {
			v.t.Fatalf("llm_response data %s: %v", ev.Data, err)
		}
		u := *d.Usage
		perNode[ev.NodeID] = u
		sum.PromptTokens += u.PromptTokens
		sum.CompletionTokens += u.CompletionTokens
		sum.TotalTokens += u.TotalTokens
		if u.CostUSD != nil {
			c := *u.CostUSD
			if sum.CostUSD != nil {
				c += *sum.CostUSD
			}
			sum.CostUSD = &c
		}
	}
	return sum, perNode
}

func sameUsageJSON(a, b usageJSON) bool {
	if a.PromptTokens != b.PromptTokens || a.CompletionTokens != b.CompletionTokens || a.TotalTokens != b.TotalTokens ||
		(a.CostUSD == nil) != (b.CostUSD == nil) {
		return false
	}
	return a.CostUSD == nil || math.Abs(*a.CostUSD-*b.CostUSD) < 1e-12
}

func TestRunUsageTotals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prices llm.Prices
	}{
		{"unpriced", nil},
		{"priced", llm.Prices{llm.DefaultModel: {Input: 0.15, Output: 0.6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t, func(o *envOpts) { o.prices = tc.prices })
			var run struct {
				RunID string    `json:"runId"`
				Usage usageJSON `json:"usage"`
			}
			v.must(201, "POST", "/api/runs", map[string]any{"graph": threeNodeGraph()}, &run)
			v.wait(run.RunID)

			var detail struct {
				Usage usageJSON `json:"usage"`
			}
			v.must(200, "GET", "/api/runs/"+run.RunID, nil, &detail)
			sum, perNode := eventUsage(v, run.RunID)
			if len(perNode) != 2 || perNode["a1"].TotalTokens <= 0 || perNode["a2"].TotalTokens <= 0 {
				t.Fatalf("per-node usage %+v", perNode)
			}
			if !sameUsageJSON(detail.Usage, sum) || detail.Usage.TotalTokens != detail.Usage.PromptTokens+detail.Usage.CompletionTokens {
				t.Errorf("run usage %+v, want the llm_response sum %+v", detail.Usage, sum)
			}
			if (detail.Usage.CostUSD != nil) != (tc.prices != nil) {
				t.Errorf("costUsd %v with prices %v", detail.Usage.CostUSD, tc.prices)
			}
			if tc.prices != nil {
				p := tc.prices[llm.DefaultModel]
				want := (float64(sum.PromptTokens)*p.Input + float64(sum.CompletionTokens)*p.Output) / 1e6
				if math.Abs(*detail.Usage.CostUSD-want) > 1e-12 {
					t.Errorf("cost %v, want %v", *detail.Usage.CostUSD, want)
				}
			}

			// The list reads the stored header.
			var list []struct {
				RunID string    `json:"runId"`
				Usage usageJSON `json:"usage"`
			}
			v.must(200, "GET", "/api/runs", nil, &list)
			if len(list) != 1 || list[0].RunID != run.RunID || !sameUsageJSON(list[0].Usage, sum) {
				t.Errorf("list %+v, want usage %+v", list, sum)
			}
		})
	}
}

// A run that made no model call reports zero usage, not an absent field.
func TestRunUsageZeroWithoutLLM(t *testing.T) {
	v := newEnv(t)
	var run struct {
		RunID string `json:"runId"`
	}
	v.must(201, "POST", "/api/runs", map[string]any{"graph": noAgentGraph()}, &run)
	v.wait(run.RunID)
	var detail map[string]json.RawMessage
	v.must(200, "GET", "/api/runs/"+run.RunID, nil, &detail)
	if got := string(detail["usage"]); got != `{"promptTokens":0,"completionTokens":0,"totalTokens":0}` {
		t.Errorf("usage = %s", got)
	}
}

// TestNonFiniteCostNeverBreaksTheAPI: a price table built in code with an
// absurd price once made a run's cost +Inf, stored, after which GET
// /api/runs answered 500 for good. No cost is stored then, and a
// non-finite cost already in the database is left out of the answers.
func TestNonFiniteCostNeverBreaksTheAPI(t *testing.T) {
	v := newEnv(t, func(o *envOpts) { o.prices = llm.Prices{llm.DefaultModel: {Input: 1e308, Output: 1e308}} })
	var run struct {
		RunID string `json:"runId"`
	}
	v.must(201, "POST", "/api/runs", map[string]any{"graph": threeNodeGraph()}, &run)
	v.wait(run.RunID)
	var list []struct {
		RunID string    `json:"runId"`
		Usage usageJSON `json:"usage"`
	}
	v.must(200, "GET", "/api/runs", nil, &list)
	if len(list) != 1 || list[0].Usage.CostUSD != nil || list[0].Usage.TotalTokens == 0 {
		t.Errorf("list %+v: want the tokens counted and no cost", list)
	}
	if r, err := v.st.GetRun(context.Background(), run.RunID); err != nil || r.Usage.CostUSD != nil {
		t.Errorf("stored usage %+v (%v): want no cost", r.Usage, err)
	}

	// A cost stored by an older version.
	id := createRawRun(t, v.st, engine.StatusRunning)
	now := time.Now().UTC()
	inf := math.Inf(1)
	r := &engine.Run{ID: id, Kind: engine.KindGraph, Status: engine.StatusCompleted, PendingApprovals: []engine.PendingApproval{},
		CreatedAt: now, UpdatedAt: now, FinishedAt: &now, Usage: engine.Usage{PromptTokens: 1, TotalTokens: 1, CostUSD: &inf}}
	if err := v.st.Checkpoint(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
	v.must(200, "GET", "/api/runs", nil, &list)
	v.must(200, "GET", "/api/runs/"+id, nil, nil)
	for _, l := range list {
		if l.Usage.CostUSD != nil {
			t.Errorf("run %s: cost %v", l.RunID, *l.Usage.CostUSD)
		}
	}
}
