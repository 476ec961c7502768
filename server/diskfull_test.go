package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/store/sqlite"
)

// TestDiskFullIs503: when the database cannot grow (a full disk; here its
// size cap), saving a workflow and starting a run answer 503 disk_full
// saying so, not a bare 500; what was stored stays readable and unchanged.
func TestDiskFullIs503(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.storeOpts = []sqlite.Option{sqlite.WithMaxSize(1 << 20)} })
	var done runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph(), "input": "before"}, &done)
	v.wait(done.RunID)
	v.must(http.StatusOK, "POST", "/api/runs/"+done.RunID+"/approvals/ok", map[string]any{"decision": "approve"}, nil)
	if r := v.wait(done.RunID); r.Status != engine.StatusCompleted {
		t.Fatalf("run before the disk filled: %s", r.Status)
	}

	big := strings.Repeat("x", 64<<10)
	g := newGraph().node("s", graph.TypeStart, graph.NodeData{InitialInput: big}).build()
	var full *response
	for i := 0; i < 100 && full == nil; i++ {
		r := v.request("POST", "/api/workflows", map[string]any{"name": "filler", "graph": g})
		switch r.status {
		case http.StatusCreated:
		case http.StatusServiceUnavailable:
			full = r
		default:
			t.Fatalf("save %d: %d %s", i, r.status, r.body)
		}
	}
	if full == nil {
		t.Fatal("the capped database never filled")
	}
	for _, r := range []*response{full,
		v.request("POST", "/api/runs", map[string]any{"graph": approvalGraph(), "input": big})} {
		if r.status != http.StatusServiceUnavailable || r.errCode(t) != CodeDiskFull || !strings.Contains(string(r.body), "disk full") {
			t.Errorf("want 503 disk_full saying \"disk full\", got %d %s", r.status, truncate(string(r.body), 300))
		}
	}
	var got runJSON
	v.must(http.StatusOK, "GET", "/api/runs/"+done.RunID, nil, &got)
	if got.Status != engine.StatusCompleted {
		t.Errorf("the finished run is now %s", got.Status)
	}
	v.must(http.StatusOK, "GET", "/api/workflows", nil, nil)
}
