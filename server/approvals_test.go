package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

type approvalJSON struct {
	RunID        string `json:"runId"`
	NodeID       string `json:"nodeId"`
	WorkflowID   string `json:"workflowId"`
	WorkflowName string `json:"workflowName"`
	Kind         string `json:"kind"`
	Prompt       string `json:"prompt"`
	Input        string `json:"input"`
	RunInput     string `json:"runInput"`
	Since        string `json:"since"`
}

// TestApprovalsInbox: the inbox lists every waiting approval across
// workflows and runs, longest waiting first, and drops one once answered.
func TestApprovalsInbox(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var empty []approvalJSON
	v.must(http.StatusOK, "GET", "/api/approvals", nil, &empty)
	if empty == nil || len(empty) != 0 {
		t.Fatalf("empty inbox: %+v", empty)
	}

	var alpha, beta wfJSON
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "Alpha", "graph": approvalGraph()}, &alpha)
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "Beta", "graph": approvalGraph()}, &beta)
	start := func(body map[string]any) string {
		var run runJSON
		v.must(http.StatusCreated, "POST", "/api/runs", body, &run)
		v.wait(run.RunID)
		return run.RunID
	}
	ra := start(map[string]any{"workflowId": alpha.ID, "input": "one"})
	rb := start(map[string]any{"workflowId": beta.ID, "input": "two"})
	ri := start(map[string]any{"graph": approvalGraph(), "input": "three"})
	// A finished run is not in the inbox.
	done := start(map[string]any{"graph": noAgentGraph()})
	if r := v.request("POST", "/api/runs/"+done+"/cancel", nil); r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	v.wait(done)

	var items []approvalJSON
	v.must(http.StatusOK, "GET", "/api/approvals", nil, &items)
	if len(items) != 3 {
		t.Fatalf("want 3 waiting approvals, got %+v", items)
	}
	want := []struct{ run, wf, name, input string }{
		{ra, alpha.ID, "Alpha", "one"}, {rb, beta.ID, "Beta", "two"}, {ri, "", "Unsaved workflow", "three"},
	}
	for i, w := range want {
		it := items[i]
		if it.RunID != w.run || it.WorkflowID != w.wf || it.WorkflowName != w.name || it.NodeID != "ok" ||
			it.Prompt != "Ship it?" || it.Input != "echo: "+w.input || it.RunInput != w.input || it.Kind != "graph" || it.Since == "" {
			t.Errorf("item %d = %+v, want run %s of %q", i, it, w.run, w.name)
		}
	}

	v.must(http.StatusOK, "POST", "/api/runs/"+rb+"/approvals/ok", map[string]any{"decision": "approve"}, nil)
	v.wait(rb)
	v.must(http.StatusOK, "GET", "/api/approvals", nil, &items)
	if len(items) != 2 || items[0].RunID != ra || items[1].RunID != ri {
		t.Fatalf("after answering %s: %+v", rb, items)
	}
}

// TestApprovalsInboxPages: with more than a thousand paused runs the inbox
// lost the oldest approvals (it read the newest thousand runs, then
// sorted). It lists them oldest first, a page at a time, with the total.
func TestApprovalsInboxPages(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	const n = 1100
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	ids := make([]string, n)
	for i := range ids {
		// Created in order; each waits since its creation, so the oldest
		// approvals belong to the oldest runs.
		id := newID()
		ids[i] = id
		at := base.Add(time.Duration(i) * time.Second)
		status := engine.StatusPaused
		if i%10 == 5 {
			status = engine.StatusRunning // another branch still works
		}
		r := &engine.Run{ID: id, Kind: engine.KindGraph, Definition: json.RawMessage(`{"nodes":[],"edges":[]}`),
			Status: status, WaitingForInput: true, Input: fmt.Sprint(i),
			PendingApprovals: []engine.PendingApproval{{NodeID: "ok", Prompt: "Ship it?", Since: at}},
			CreatedAt:        at, UpdatedAt: at}
		if err := v.st.CreateRun(context.Background(), r, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	r := v.request("GET", "/api/approvals", nil)
	var page []approvalJSON
	r.decode(t, &page)
	if r.status != http.StatusOK || len(page) != DefaultApprovalsPage || r.header.Get("X-Total-Count") != fmt.Sprint(n) {
		t.Fatalf("first page: %d, %d items, total %q", r.status, len(page), r.header.Get("X-Total-Count"))
	}
	if page[0].RunID != ids[0] || page[len(page)-1].RunID != ids[DefaultApprovalsPage-1] {
		t.Fatalf("first page runs from input %s to %s, want the oldest from 0", page[0].RunInput, page[len(page)-1].RunInput)
	}
	next := r.header.Get("X-Next-Cursor")
	if next == "" {
		t.Fatal("a full page without X-Next-Cursor")
	}
	r = v.request("GET", "/api/approvals?after="+queryEscape(next), nil)
	r.decode(t, &page)
	if len(page) != n-DefaultApprovalsPage || page[0].RunID != ids[DefaultApprovalsPage] || page[len(page)-1].RunID != ids[n-1] ||
		r.header.Get("X-Next-Cursor") != "" {
		t.Fatalf("second page: %d items, next %q", len(page), r.header.Get("X-Next-Cursor"))
	}

	// Small pages walk the same order.
	var walked []string
	for cursor := ""; ; {
		path := "/api/approvals?limit=300"
		if cursor != "" {
			path += "&after=" + queryEscape(cursor)
		}
		r := v.request("GET", path, nil)
		var p []approvalJSON
		r.decode(t, &p)
		for _, it := range p {
			walked = append(walked, it.RunID)
		}
		if cursor = r.header.Get("X-Next-Cursor"); cursor == "" {
			break
		}
	}
	if len(walked) != n || walked[0] != ids[0] || walked[n-1] != ids[n-1] {
		t.Fatalf("walked %d items", len(walked))
	}
	for _, bad := range []string{"limit=0", "limit=10001", "limit=x", "after=!!!", "after=bm9wZQ"} {
		if r := v.request("GET", "/api/approvals?"+bad, nil); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d", bad, r.status)
		}
	}
}
