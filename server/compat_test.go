package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

type compatJSON struct {
	RunID           string           `json:"runId"`
	Status          engine.RunStatus `json:"status"`
	Logs            []map[string]any `json:"logs"`
	State           compatState      `json:"state"`
	WaitingForInput bool             `json:"waitingForInput"`
	CurrentNodeID   *string          `json:"currentNodeId"`
	Workflow        *afGraph         `json:"workflow"`
}

// node returns the node with id (nil if none).
func (g *afGraph) node(id string) *afNode {
	for i := range g.Nodes {
		if g.Nodes[i].ID == id {
			return &g.Nodes[i]
		}
	}
	return nil
}

func checkLogShape(t *testing.T, logs []map[string]any) {
	t.Helper()
	for _, l := range logs {
		keys := make([]string, 0, len(l))
		for k := range l {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if strings.Join(keys, ",") != "content,nodeId,timestamp,type" {
			t.Fatalf("log entry keys %v, want timestamp,nodeId,type,content", keys)
		}
	}
}

func TestCompatRunAndResume(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	// A legacy-shaped graph: the answer's workflow is normalized.
	var res compatJSON
	v.must(http.StatusOK, "POST", "/api/run", `{"graph":`+legacyGraph+`}`, &res)
	if res.Status != engine.StatusPaused || !res.WaitingForInput || res.CurrentNodeID == nil || *res.CurrentNodeID != "q" {
		t.Fatalf("run: %+v", res)
	}
	if res.Workflow == nil || res.Workflow.node("q").Type != graph.TypeApproval || res.Workflow.node("end") != nil {
		t.Fatalf("workflow not normalized: %+v", res.Workflow)
	}
	if res.State.Outputs["w"] != "echo: go" || res.State.NodeStatuses["q"] != "waiting" || res.State.NodeStatuses["p"] != "idle" {
		t.Fatalf("state %+v", res.State)
	}
	checkLogShape(t, res.Logs)
	if len(res.Logs) == 0 || res.Logs[len(res.Logs)-1]["type"] != engine.EvRunStatus {
		t.Fatalf("logs %v", res.Logs)
	}

	var again compatJSON
	v.must(http.StatusOK, "GET", "/api/run/"+res.RunID, nil, &again)
	if again.RunID != res.RunID || again.Status != engine.StatusPaused || len(again.Logs) != len(res.Logs) {
		t.Fatalf("GET /api/run: %+v", again)
	}

	var done compatJSON
	v.must(http.StatusOK, "POST", "/api/resume", map[string]any{"runId": res.RunID, "input": map[string]any{"decision": "approve", "note": "ok"}}, &done)
	if done.Status != engine.StatusCompleted || done.WaitingForInput || done.State.NodeStatuses["p"] != "completed" ||
		!strings.HasPrefix(done.State.Outputs["p"], "echo: ") || len(done.Logs) <= len(res.Logs) {
		t.Fatalf("resume: %+v", done)
	}

	// Resuming a run that is not paused is a conflict.
	r := v.request("POST", "/api/resume", map[string]any{"runId": res.RunID, "input": map[string]any{"decision": "approve"}})
	if r.status != http.StatusConflict || r.errCode(t) != CodeConflict {
		t.Fatalf("resume ended run: %d %s", r.status, r.body)
	}
}

func TestCompatErrors(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	noLLM := newEnv(t, func(o *envOpts) { o.noLLM = true })
	cases := []struct {
		name   string
		v      *env
		path   string
		body   any
		status int
		code   string
	}{
		{"invalid graph", v, "/api/run", map[string]any{"graph": invalidGraph()}, 400, CodeInvalidGraph},
		{"invalid graph, stream", v, "/api/run-stream", map[string]any{"graph": invalidGraph()}, 400, CodeInvalidGraph},
		{"malformed", v, "/api/run", `{"graph": {"nodes": [}`, 400, CodeBadRequest},
		{"agents without LLM", noLLM, "/api/run", map[string]any{"graph": threeNodeGraph()}, 503, CodeNoLLM},
		{"agents without LLM, stream", noLLM, "/api/run-stream", map[string]any{"graph": threeNodeGraph()}, 503, CodeNoLLM},
		{"unknown run", v, "/api/resume", map[string]any{"runId": newID(), "input": map[string]any{"decision": "approve"}}, 404, CodeNotFound},
		{"unknown run, stream", v, "/api/resume-stream", map[string]any{"runId": newID(), "input": map[string]any{"decision": "approve"}}, 404, CodeNotFound},
		{"bad run id", v, "/api/resume", map[string]any{"runId": "x y", "input": map[string]any{"decision": "approve"}}, 400, CodeBadRequest},
		{"bad decision", v, "/api/resume", map[string]any{"runId": newID(), "input": map[string]any{"decision": "perhaps"}}, 400, CodeInvalidDecision},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.v.with(t).request("POST", tc.path, tc.body)
			if r.status != tc.status || r.errCode(t) != tc.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	if r := v.request("GET", "/api/run/"+newID(), nil); r.status != http.StatusNotFound {
		t.Fatalf("GET unknown run: %d", r.status)
	}
	// A graph without agents runs without an LLM.
	var res compatJSON
	noLLM.must(http.StatusOK, "POST", "/api/run", map[string]any{"graph": noAgentGraph()}, &res)
	if res.Status != engine.StatusPaused {
		t.Fatalf("no-agent graph: %+v", res)
	}
}

// TestCompatConcurrentResume: a second resume while one is in progress
// gets 409 at once.
func TestCompatConcurrentResume(t *testing.T) {
	t.Parallel()
	// The LLM calls of the first resume wait until the second resume was
	// answered: the first is in progress however slow the machine is.
	var gated atomic.Bool
	release := make(chan struct{})
	var once sync.Once
	v := newEnv(t, func(o *envOpts) {
		o.llmOpts = []fakeopenai.Option{fakeopenai.WithHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
			if gated.Load() {
				<-release
			}
			return fakeopenai.DefaultReply(req)
		})}
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the fake server closes
	var res compatJSON
	v.must(http.StatusOK, "POST", "/api/run", map[string]any{"graph": approvalGraph()}, &res)
	gated.Store(true)
	first := make(chan *response, 1)
	go func() {
		first <- v.request("POST", "/api/resume", map[string]any{"runId": res.RunID, "input": map[string]any{"decision": "approve"}})
	}()
	waitFor(t, "the first resume to be in progress", func() bool {
		v.srv.resumingMu.Lock()
		defer v.srv.resumingMu.Unlock()
		return v.srv.resuming[res.RunID]
	})
	r := v.request("POST", "/api/resume", map[string]any{"runId": res.RunID, "input": map[string]any{"decision": "reject"}})
	if r.status != http.StatusConflict {
		t.Fatalf("second resume: %d %s", r.status, r.body)
	}
	once.Do(func() { close(release) })
	if r := <-first; r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"completed"`) {
		t.Fatalf("first resume: %d %s", r.status, r.body)
	}
}

type sseMsg struct {
	Type    string      `json:"type"`
	RunID   string      `json:"runId"`
	Entry   *compatLog  `json:"entry"`
	Result  *compatJSON `json:"result"`
	Message string      `json:"message"`
}

// readSSE posts body to path and collects the Server-Sent Events.
func (v *env) readSSE(path string, body any) []sseMsg {
	v.t.Helper()
	raw, _ := json.Marshal(body)
	res, err := http.Post(v.url+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		v.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		v.t.Fatalf("%s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	var out []sseMsg
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			v.t.Fatalf("unexpected SSE line %q", line)
		}
		var m sseMsg
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			v.t.Fatalf("SSE data %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

func TestCompatStreams(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	msgs := v.readSSE("/api/run-stream", map[string]any{"graph": approvalGraph()})
	if len(msgs) < 3 || msgs[0].Type != "start" || msgs[0].RunID == "" || msgs[len(msgs)-1].Type != "done" {
		t.Fatalf("run-stream messages %+v", msgs)
	}
	runID := msgs[0].RunID
	result := msgs[len(msgs)-1].Result
	logs := msgs[1 : len(msgs)-1]
	for _, m := range logs {
		if m.Type != "log" || m.Entry == nil || m.Entry.Timestamp.IsZero() {
			t.Fatalf("not a log message: %+v", m)
		}
	}
	if result == nil || result.RunID != runID || result.Status != engine.StatusPaused || !result.WaitingForInput ||
		len(result.Logs) != len(logs) {
		t.Fatalf("done result %+v (%d streamed logs)", result, len(logs))
	}
	for i, m := range logs {
		if m.Entry.Type != result.Logs[i]["type"] || m.Entry.Content != result.Logs[i]["content"] {
			t.Fatalf("streamed log %d %+v differs from the result's %v", i, m.Entry, result.Logs[i])
		}
	}

	msgs = v.readSSE("/api/resume-stream", map[string]any{"runId": runID, "input": map[string]any{"decision": "reject", "note": "again"}})
	if len(msgs) < 3 || msgs[0].Type != "start" || msgs[len(msgs)-1].Type != "done" {
		t.Fatalf("resume-stream messages %+v", msgs)
	}
	result = msgs[len(msgs)-1].Result
	if result.Status != engine.StatusCompleted || result.State.NodeStatuses["rev"] != "completed" {
		t.Fatalf("resume result %+v", result)
	}
	first := msgs[1].Entry
	if first.Type != engine.EvRunStatus && first.Type != engine.EvInputReceived && first.Type != engine.EvStepStart {
		t.Fatalf("resume stream starts with %+v: it should start after the pause", first)
	}
	for _, m := range msgs[1 : len(msgs)-1] {
		if m.Entry.Type == engine.EvWaitInput {
			t.Fatalf("resume stream repeats the log before the pause: %+v", m.Entry)
		}
	}
}

// TestCompatParallelRuns: several AgentFlow clients at once.
func TestCompatParallelRuns(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := v.request("POST", "/api/run", map[string]any{"graph": threeNodeGraph()})
			if r.status != 200 || !strings.Contains(string(r.body), `"status":"completed"`) {
				errs <- string(r.body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestCompatLLMRetriesAreNotErrors: AgentFlow's client draws every log
// entry whose type contains "llm_error" (and "error") as an error and
// marks a completed run that has one as Failed. On the compatibility
// routes a retried model call is llm_retry, and a call that finally fails
// is one error entry (the node's), not two.
func TestCompatLLMRetriesAreNotErrors(t *testing.T) {
	t.Parallel()
	one := func() *graph.Graph {
		return newGraph().node("s", graph.TypeStart, graph.NodeData{InitialInput: "hi"}).
			node("a", graph.TypeAgent, graph.NodeData{AgentName: "A"}).edge("s", "output", "a").build()
	}
	types := func(logs []map[string]any) map[string]int {
		n := map[string]int{}
		for _, l := range logs {
			n[l["type"].(string)]++
		}
		return n
	}
	errorish := func(n map[string]int) int {
		c := 0
		for ty, k := range n {
			if strings.Contains(ty, "llm_error") || ty == "error" {
				c += k
			}
		}
		return c
	}
	t.Run("retried then completed", func(t *testing.T) {
		t.Parallel()
		v := newEnv(t).with(t)
		v.fake.Enqueue(fakeopenai.Reply{Status: 500}, fakeopenai.Reply{Status: 503})
		var res compatJSON
		v.must(http.StatusOK, "POST", "/api/run", map[string]any{"graph": one()}, &res)
		n := types(res.Logs)
		if res.Status != engine.StatusCompleted || errorish(n) != 0 || n["llm_retry"] != 2 {
			t.Fatalf("status %s, log types %v: want completed with two llm_retry and no error", res.Status, n)
		}
		var again compatJSON
		v.must(http.StatusOK, "GET", "/api/run/"+res.RunID, nil, &again)
		if n := types(again.Logs); errorish(n) != 0 || n["llm_retry"] != 2 {
			t.Errorf("GET /api/run log types %v", n)
		}
		// The native API keeps the engine's types.
		var evs []engine.Event
		v.must(http.StatusOK, "GET", "/api/runs/"+res.RunID+"/events", nil, &evs)
		native := 0
		for _, ev := range evs {
			if ev.Type == engine.EvLLMError {
				native++
			}
		}
		if native != 2 {
			t.Errorf("native log has %d llm_error events, want 2", native)
		}
	})
	t.Run("retried then failed", func(t *testing.T) {
		t.Parallel()
		v := newEnv(t).with(t)
		for i := 0; i < 4; i++ {
			v.fake.Enqueue(fakeopenai.Reply{Status: 500})
		}
		var res compatJSON
		v.must(http.StatusOK, "POST", "/api/run", map[string]any{"graph": one()}, &res)
		n := types(res.Logs)
		if res.Status != engine.StatusFailed || errorish(n) != 1 || n["error"] != 1 || n["llm_retry"] != 3 || n["llm_failed"] != 1 {
			t.Fatalf("status %s, log types %v: want failed with three llm_retry, one llm_failed and one error", res.Status, n)
		}
	})
	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		v := newEnv(t).with(t)
		v.fake.Enqueue(fakeopenai.Reply{Status: 500})
		n := map[string]int{}
		for _, m := range v.readSSE("/api/run-stream", map[string]any{"graph": one()}) {
			if m.Entry != nil {
				n[m.Entry.Type]++
			}
			if m.Type == "done" && (m.Result == nil || m.Result.Status != engine.StatusCompleted || errorish(types(m.Result.Logs)) != 0) {
				t.Errorf("done %+v", m.Result)
			}
		}
		if errorish(n) != 0 || n["llm_retry"] != 1 {
			t.Errorf("streamed log types %v", n)
		}
	})
}
