package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// TestRunWorkflowAndWait: POST /api/workflows/{id}/runs starts a saved
// workflow; with wait it answers when the run ends (200, outputs) or
// pauses (200, pending approvals); still running at the end of the wait
// it answers 202 with Location; bad waits and unknown workflows are
// refused.
func TestRunWorkflowAndWait(t *testing.T) {
	v := newEnv(t)
	var wf struct {
		ID string `json:"id"`
	}
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "Chain", "graph": threeNodeGraph()}, &wf)
	var done workflowRunResponse
	r := v.must(http.StatusOK, "POST", "/api/workflows/"+wf.ID+"/runs", map[string]any{"input": "topic", "wait": "30s"}, &done)
	if !done.Done || done.Status != engine.StatusCompleted || done.Outputs["a2"] != "echo: echo: topic" {
		t.Errorf("completed: %+v", done)
	}
	if loc := r.header.Get("Location"); loc != "/api/runs/"+done.RunID {
		t.Errorf("Location %q", loc)
	}

	var gated struct {
		ID string `json:"id"`
	}
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "Gate", "graph": approvalGraph()}, &gated)
	var paused workflowRunResponse
	v.must(http.StatusOK, "POST", "/api/workflows/"+gated.ID+"/runs", map[string]any{"wait": 30}, &paused)
	if !paused.Done || paused.Status != engine.StatusPaused || len(paused.PendingApprovals) != 1 || paused.Outputs["w"] == "" {
		t.Errorf("paused: %+v", paused)
	}

	// A slow model: still running when the wait ends.
	v.fake.Enqueue(fakeopenai.Reply{Text: "slow", Latency: 3 * time.Second})
	var running workflowRunResponse
	v.must(http.StatusAccepted, "POST", "/api/workflows/"+wf.ID+"/runs", map[string]any{"wait": "50ms"}, &running)
	if running.Done || running.Status.Terminal() {
		t.Errorf("running: %+v", running)
	}
	v.wait(running.RunID)

	for _, c := range []struct {
		body any
		want string
	}{
		{map[string]any{"wait": "soon"}, "wait"},
		{map[string]any{"wait": -1}, "negative"},
		{map[string]any{"wait": "11m"}, "at most"},
	} {
		resp := v.request("POST", "/api/workflows/"+wf.ID+"/runs", c.body)
		if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), c.want) {
			t.Errorf("%v: %d %s", c.body, resp.status, resp.body)
		}
	}
	if resp := v.request("POST", "/api/workflows/nope/runs", map[string]any{}); resp.status != http.StatusNotFound {
		t.Errorf("unknown workflow: %d %s", resp.status, resp.body)
	}
}

// TestForkRunOverHTTP: POST /api/runs/{id}/fork starts a run from a node
// that reuses upstream results (with a pinned output), linked to its
// parent (forkOf, in the run and in the runs list); forking a paused run is 409, an unknown node 400.
func TestForkRunOverHTTP(t *testing.T) {
	v := newEnv(t)
	var parent runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": threeNodeGraph(), "input": "topic"}, &parent)
	v.wait(parent.RunID)
	var fork struct {
		RunID  string `json:"runId"`
		ForkOf *struct {
			RunID  string `json:"runId"`
			NodeID string `json:"nodeId"`
		} `json:"forkOf"`
	}
	v.must(http.StatusCreated, "POST", "/api/runs/"+parent.RunID+"/fork",
		map[string]any{"nodeId": "a2", "pinned": map[string]string{"a1": "pinned text"}}, &fork)
	v.wait(fork.RunID)
	var got struct {
		Status  string            `json:"status"`
		Outputs map[string]string `json:"outputs"`
		ForkOf  *struct {
			RunID  string `json:"runId"`
			NodeID string `json:"nodeId"`
		} `json:"forkOf"`
	}
	v.must(http.StatusOK, "GET", "/api/runs/"+fork.RunID, nil, &got)
	if got.Status != "completed" || got.Outputs["a2"] != "echo: pinned text" || got.ForkOf == nil ||
		got.ForkOf.RunID != parent.RunID || got.ForkOf.NodeID != "a2" {
		t.Errorf("fork: %+v", got)
	}
	// The runs list links the fork to its parent, and only the fork.
	var list []struct {
		RunID  string `json:"runId"`
		ForkOf *struct {
			RunID  string `json:"runId"`
			NodeID string `json:"nodeId"`
		} `json:"forkOf"`
	}
	v.must(http.StatusOK, "GET", "/api/runs", nil, &list)
	marked := map[string]string{}
	for _, r := range list {
		if r.ForkOf != nil {
			marked[r.RunID] = r.ForkOf.RunID + "@" + r.ForkOf.NodeID
		}
	}
	if len(marked) != 1 || marked[fork.RunID] != parent.RunID+"@a2" {
		t.Errorf("runs list forks: %v (want %s → %s@a2)", marked, fork.RunID, parent.RunID)
	}
	var paused runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &paused)
	v.wait(paused.RunID)
	if r := v.request("POST", "/api/runs/"+paused.RunID+"/fork", map[string]any{"nodeId": "w"}); r.status != http.StatusConflict {
		t.Errorf("fork of a paused run: %d %s", r.status, r.body)
	}
	if r := v.request("POST", "/api/runs/"+parent.RunID+"/fork", map[string]any{"nodeId": "zz"}); r.status != http.StatusBadRequest {
		t.Errorf("unknown node: %d %s", r.status, r.body)
	}
}
