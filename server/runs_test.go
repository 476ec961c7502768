package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

type runJSON struct {
	RunID            string                   `json:"runId"`
	WorkflowID       string                   `json:"workflowId"`
	Status           engine.RunStatus         `json:"status"`
	Input            string                   `json:"input"`
	WaitingForInput  bool                     `json:"waitingForInput"`
	CurrentNodeID    string                   `json:"currentNodeId"`
	PendingApprovals []engine.PendingApproval `json:"pendingApprovals"`
	Outputs          map[string]string        `json:"outputs"`
	Error            string                   `json:"error"`
	CreatedAt        time.Time                `json:"createdAt"`
	FinishedAt       *time.Time               `json:"finishedAt"`
	Graph            *graph.Graph             `json:"graph"`
	Nodes            []nodeJSON               `json:"nodes"`
}

func (r *runJSON) node(id string) *nodeJSON {
	for i := range r.Nodes {
		if r.Nodes[i].NodeID == id {
			return &r.Nodes[i]
		}
	}
	return nil
}

func TestRunLifecycleWithApproval(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var wf wfJSON
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "Approve me", "graph": approvalGraph()}, &wf)

	var run runJSON
	r := v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"workflowId": wf.ID, "input": "topic"}, &run)
	if run.RunID == "" || run.WorkflowID != wf.ID || run.Input != "topic" || run.Graph == nil || len(run.Nodes) != 5 {
		t.Fatalf("created run %s", r.body)
	}
	v.wait(run.RunID)
	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
	if run.Status != engine.StatusPaused || !run.WaitingForInput || len(run.PendingApprovals) != 1 ||
		run.PendingApprovals[0].NodeID != "ok" || run.CurrentNodeID != "ok" {
		t.Fatalf("paused run %+v", run)
	}
	if run.Outputs["w"] != "echo: topic" || run.node("w").Status != "completed" || run.node("ok").Status != "waiting" ||
		run.node("pub").Status != "idle" {
		t.Fatalf("outputs %v nodes %+v", run.Outputs, run.Nodes)
	}

	// Events, whole and after a seq.
	var evs []engine.Event
	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID+"/events", nil, &evs)
	checkSeqs(t, evs, 0)
	var tail []engine.Event
	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID+"/events?after=3&limit=2", nil, &tail)
	if len(tail) != 2 || tail[0].Seq != 4 {
		t.Fatalf("events after 3: %+v", tail)
	}

	// Approve: 200 with the run; it completes.
	v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/approvals/ok", map[string]any{"decision": "APPROVE", "note": "lgtm"}, &run)
	if run.Status.Terminal() && run.Status != engine.StatusCompleted {
		t.Fatalf("after approval: %+v", run)
	}
	v.wait(run.RunID)
	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
	if run.Status != engine.StatusCompleted || run.FinishedAt == nil || run.node("pub").Status != "completed" ||
		run.node("rev").Status != "skipped" && run.node("rev").Status != "idle" {
		t.Fatalf("finished run %+v", run)
	}
	// The node is no longer waiting.
	if r := v.request("POST", "/api/runs/"+run.RunID+"/approvals/ok", map[string]any{"decision": "approve"}); r.status != http.StatusConflict {
		t.Fatalf("second decision: %d %s", r.status, r.body)
	}
	// Cancel of an ended run is a conflict.
	if r := v.request("POST", "/api/runs/"+run.RunID+"/cancel", nil); r.status != http.StatusConflict {
		t.Fatalf("cancel ended run: %d %s", r.status, r.body)
	}

	// Listing with filters.
	var list []runJSON
	v.must(http.StatusOK, "GET", "/api/runs?workflowId="+wf.ID+"&status=completed", nil, &list)
	if len(list) != 1 || list[0].RunID != run.RunID || list[0].Graph != nil || list[0].Nodes != nil {
		t.Fatalf("list %+v", list)
	}
	v.must(http.StatusOK, "GET", "/api/runs?status=paused", nil, &list)
	if len(list) != 0 {
		t.Fatalf("paused list %+v", list)
	}
}

func TestRunRejectAndCancel(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var run runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &run)
	v.wait(run.RunID)
	v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/approvals/ok", map[string]any{"decision": "reject", "note": "too long"}, &run)
	v.wait(run.RunID)
	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
	if run.Status != engine.StatusCompleted || run.node("rev").Status != "completed" || run.node("pub").Status == "completed" {
		t.Fatalf("rejected run %+v", run)
	}

	// Cancel a paused run.
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &run)
	v.wait(run.RunID)
	v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/cancel", nil, &run)
	v.wait(run.RunID)
	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
	if run.Status != engine.StatusCancelled {
		t.Fatalf("cancelled run %+v", run)
	}
}

// TestApprovalRace: many clients answer one approval at once; exactly one
// wins with 200, the others get 409.
func TestApprovalRace(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	for round := range 5 {
		var run runJSON
		v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &run)
		v.wait(run.RunID)
		const clients = 10
		statuses := make([]int, clients)
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				decision := "approve"
				if i%2 == 1 {
					decision = "reject"
				}
				statuses[i] = v.request("POST", "/api/runs/"+run.RunID+"/approvals/ok", map[string]any{"decision": decision}).status
			}()
		}
		wg.Wait()
		ok, conflict := 0, 0
		for _, s := range statuses {
			switch s {
			case 200:
				ok++
			case 409:
				conflict++
			}
		}
		if ok != 1 || conflict != clients-1 {
			t.Fatalf("round %d: statuses %v", round, statuses)
		}
	}
}

// TestInterruptedRunContinues: a run whose process died is left
// interrupted by --no-recover and continued through the API.
func TestInterruptedRunContinues(t *testing.T) {
	t.Parallel()
	// The first agent's call hangs until the engine "dies" (Close cancels
	// it): the run is caught mid-node however slow the machine is.
	var calls atomic.Int32
	v := newEnv(t, func(o *envOpts) {
		o.llmOpts = []fakeopenai.Option{fakeopenai.WithHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
			if calls.Add(1) == 1 {
				return fakeopenai.Reply{Hang: true}
			}
			return fakeopenai.DefaultReply(req)
		})}
	})
	var run runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": threeNodeGraph()}, &run)
	waitFor(t, "the first agent to start", func() bool { return v.fake.InFlight() > 0 })
	v.e.Close() // the process "dies": the run stays running, without owner

	// A new engine on the same database, recovering without resuming.
	e2, err := engine.New(engine.Config{Store: v.st, ArtifactsRoot: t.TempDir(), LLM: mustLLM(t, v.fake)})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	took, err := e2.Recover(context.Background(), false)
	if err != nil || len(took) != 1 || took[0] != run.RunID {
		t.Fatalf("recover: %v %v", took, err)
	}
	s2, err := New(Config{Engine: e2, Store: v.st, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	v2 := *v
	v2.e, v2.srv = e2, s2
	v2.ts = nil
	h := newTestHTTP(t, s2)
	v2.url = h
	v2.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
	if run.Status != engine.StatusInterrupted {
		t.Fatalf("status %s, want interrupted", run.Status)
	}
	v2.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/continue", nil, &run)
	v2.wait(run.RunID)
	v2.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
	if run.Status != engine.StatusCompleted || !strings.HasPrefix(run.Outputs["a2"], "echo: ") {
		t.Fatalf("continued run %+v", run)
	}
}

// TestYAMLRunDetail: a YAML run (started by the engine) shows its source
// and its DAG as a read-only graph projection (yaml_graph.go), and streams
// like any other run.
func TestYAMLRunDetail(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	src := "name: hello\ndescription: says hi\nnodes:\n  - id: a\n    bash: echo hi\n"
	run, err := v.e.StartYAML(context.Background(), "hello.yaml", []byte(src), engine.StartOptions{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	v.wait(run.ID)
	var raw map[string]any
	v.must(http.StatusOK, "GET", "/api/runs/"+run.ID, nil, &raw)
	if raw["kind"] != "yaml" || raw["source"] != src || raw["graph"] == nil || raw["status"] != "completed" {
		t.Fatalf("yaml run %v", raw)
	}
	evs, err := readEvents(v.mustDial("/api/runs/"+run.ID+"/ws"), 30*time.Second)
	if closeCode(err) != 1000 || len(evs) == 0 {
		t.Fatalf("yaml run stream: %d events, %v", len(evs), err)
	}
	var res compatJSON
	v.must(http.StatusOK, "GET", "/api/run/"+run.ID, nil, &res)
	// The compat view's workflow is the run's DAG, as the detail's graph.
	if res.Workflow == nil || res.Status != engine.StatusCompleted {
		t.Fatalf("compat view of a yaml run: %+v", res)
	}
	if len(res.Workflow.Nodes) != 1 || res.Workflow.Nodes[0].ID != "a" {
		t.Fatalf("compat workflow of a yaml run: %+v", res.Workflow)
	}
}
