package server

import (
	"net/http"
	"testing"
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
