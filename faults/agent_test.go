//go:build linux

package faults

// Agents that act, under SIGKILL: a tool loop killed between turns goes on
// after a restart without running a finished call again, and a tool call
// waiting for a reviewer survives a restart and runs exactly once.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// toolEvents returns a run's tool_call and tool_result events.
func toolEvents(evs []engine.Event) (calls, results []engine.Event) {
	for _, ev := range evs {
		switch ev.Type {
		case engine.EvToolCall:
			calls = append(calls, ev)
		case engine.EvToolResult:
			results = append(results, ev)
		}
	}
	return calls, results
}

// TestServeKillDuringToolLoop: a scripted agent makes ten Bash calls, one
// per turn, each appending its number to a side file. serve is SIGKILLed
// while the model's fifth turn is in flight (the first four results are
// durable); after the restart the run completes, and every call's line is
// in the file exactly once: no finished call ran again.
func TestServeKillDuringToolLoop(t *testing.T) {
	t.Parallel()
	const key = "toolloop"
	h := newHarness(t)
	h.env = append(h.env, "SWITCHYARD_LEASE_TTL="+ownerLeaseTTL.String())
	side := filepath.Join(h.work, key+".txt")
	held := make(chan struct{})
	var once sync.Once
	h.llm.setFault(key, func(c llmCall, attempt int) (fakeopenai.Reply, bool) {
		if c.results >= 10 {
			return fakeopenai.Reply{Text: "appended ten lines"}, true
		}
		r := fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "Bash",
			Arguments: fmt.Sprintf(`{"command": "echo %d >> %s"}`, c.results+1, side)}}}
		if c.results == 4 && attempt == 1 {
			once.Do(func() { close(held) })
			r.Latency = 10 * time.Minute // held until the process that asked dies
		}
		return r, true
	})
	src := fmt.Sprintf("name: %[1]s\ndescription: ten Bash calls\nnodes:\n  - id: agent\n    prompt: \"%[2]s append ten lines\"\n    allowed_tools: [Bash]\n",
		key, marker(key, "agent"))
	if err := os.WriteFile(filepath.Join(h.workflows, key+".yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p := h.start()
	var rv runView
	p.must(t, http.MethodPost, "/api/runs", map[string]any{"workflowId": yamlWorkflowID(t, p, key)}, http.StatusCreated, &rv)
	select {
	case <-held:
	case <-time.After(90 * time.Second):
		t.Fatalf("the fifth model turn never came:\n%s", p.stderr)
	}
	_, results := toolEvents(p.events(t, rv.RunID))
	if len(results) != 4 || lineCount(t, side) != 4 {
		t.Fatalf("at the fifth turn: %d results logged, %d lines written; want 4 and 4", len(results), lineCount(t, side))
	}
	p.kill()

	p2 := h.start()
	final := p2.waitRun(t, rv.RunID, 90*time.Second)
	if final.Status != engine.StatusCompleted {
		t.Fatalf("run %s: %s %s\n%s", rv.RunID, final.Status, final.Error, p2.stderr)
	}
	b, _ := os.ReadFile(side)
	var want []string
	for k := 1; k <= 10; k++ {
		want = append(want, fmt.Sprint(k))
	}
	if got := strings.Fields(string(b)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("side file %v, want each of 1..10 once", got)
	}
	evs := p2.events(t, rv.RunID)
	checkGapless(t, rv.RunID, evs)
	calls, results := toolEvents(evs)
	if len(calls) != 10 || len(results) != 10 {
		t.Errorf("%d tool calls and %d results logged, want 10 and 10", len(calls), len(results))
	}
	p2.stop(t)
}

const approvalScript = `
rules:
  - match: "approve-write"
    turns:
      - tool_calls:
          - name: Write
            arguments: {file_path: approved.txt, content: "written once\n"}
      - text: "tool said: {{last_result}}"
`

// TestServeKillWhileToolApprovalWaits: a Write call waits for a reviewer;
// serve is SIGKILLed while it waits; after the restart the wait is still
// there (inbox and run), approving it writes the file once; on a second
// run a rejection reaches the model as the call's result.
func TestServeKillWhileToolApprovalWaits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sc, err := fakeopenai.ParseScript("approval.yaml", []byte(approvalScript))
	if err != nil {
		t.Fatal(err)
	}
	h.llm.srv.SetScript(sc)
	src := "name: gated\ndescription: a Write that waits\nnodes:\n  - id: agent\n    prompt: approve-write please\n    approve_tools: [Write]\n"
	if err := os.WriteFile(filepath.Join(h.workflows, "gated.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(h.work, "approved.txt")
	p := h.start()
	wf := yamlWorkflowID(t, p, "gated")
	start := func(p *proc) string {
		var rv runView
		p.must(t, http.MethodPost, "/api/runs", map[string]any{"workflowId": wf}, http.StatusCreated, &rv)
		if got := p.waitRun(t, rv.RunID, 60*time.Second); got.Status != engine.StatusPaused ||
			len(got.PendingApprovals) != 1 || got.PendingApprovals[0].Tool == nil || got.PendingApprovals[0].Tool.Tool != "Write" {
			t.Fatalf("run %s: %s %+v", rv.RunID, got.Status, got.PendingApprovals)
		}
		return rv.RunID
	}
	id := start(p)
	p.kill()
	if _, err := os.Stat(file); err == nil {
		t.Fatal("the file was written before the approval")
	}

	p2 := h.start()
	var inbox []struct {
		RunID string               `json:"runId"`
		Tool  *engine.ToolApproval `json:"tool"`
	}
	p2.must(t, http.MethodGet, "/api/approvals", nil, http.StatusOK, &inbox)
	if len(inbox) != 1 || inbox[0].RunID != id || inbox[0].Tool == nil || !strings.Contains(inbox[0].Tool.Diff, "+written once") {
		t.Fatalf("inbox after the restart: %+v", inbox)
	}
	p2.must(t, http.MethodPost, "/api/runs/"+id+"/approvals/agent", map[string]string{"decision": "approve"}, http.StatusOK, nil)
	if got := p2.waitEnd(t, id, 60*time.Second); got.Status != engine.StatusCompleted {
		t.Fatalf("after the approval: %s %s", got.Status, got.Error)
	}
	if b, _ := os.ReadFile(file); string(b) != "written once\n" {
		t.Errorf("file %q", b)
	}
	if _, results := toolEvents(p2.events(t, id)); len(results) != 1 {
		t.Errorf("%d tool results, want the approved call once", len(results))
	}
	// A second answer to the answered call is refused.
	if code, _, _ := p2.do(http.MethodPost, "/api/runs/"+id+"/approvals/agent", map[string]string{"decision": "approve"}); code == http.StatusOK {
		t.Error("a second approval of the same call was accepted")
	}

	// Rejected: nothing written, the model sees the note.
	_ = os.Remove(file)
	id2 := start(p2)
	p2.must(t, http.MethodPost, "/api/runs/"+id2+"/approvals/agent", map[string]string{"decision": "reject", "note": "not that file"}, http.StatusOK, nil)
	got := p2.waitRun(t, id2, 60*time.Second)
	if got.Status != engine.StatusCompleted || got.Outputs["agent"] != "tool said: denied by the reviewer: not that file" {
		t.Errorf("after the rejection: %s %q %s", got.Status, got.Outputs["agent"], got.Error)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("a rejected Write wrote the file")
	}
	p2.stop(t)
}

// TestPostgresToolApprovalAcrossServers: a tool call raised on server A
// waits; ten reviewers race on A and B; exactly one answer wins and the
// call runs once.
func TestPostgresToolApprovalAcrossServers(t *testing.T) {
	t.Parallel()
	h, _, ps := pgServers(t, 2)
	a, b := ps[0], ps[1]
	sc, err := fakeopenai.ParseScript("approval.yaml", []byte(approvalScript))
	if err != nil {
		t.Fatal(err)
	}
	h.llm.srv.SetScript(sc)
	var rv runView
	g := map[string]any{"nodes": []map[string]any{
		{"id": "s", "type": "start", "position": map[string]int{"x": 0, "y": 0}, "data": map[string]any{"initialInput": "approve-write please"}},
		{"id": "agent", "type": "agent", "position": map[string]int{"x": 200, "y": 0}, "data": map[string]any{
			"agentName": "Writer", "tools": map[string]any{"builtin": []string{"Write"}, "approve": []string{"Write"}}}},
	}, "edges": []map[string]any{{"id": "e1", "source": "s", "target": "agent", "sourceHandle": "output", "targetHandle": "input"}}}
	a.must(t, http.MethodPost, "/api/runs", map[string]any{"graph": g}, http.StatusCreated, &rv)
	got := b.waitRun(t, rv.RunID, 60*time.Second)
	if got.Status != engine.StatusPaused || len(got.PendingApprovals) != 1 || got.PendingApprovals[0].Tool == nil {
		t.Fatalf("on B: %s %+v", got.Status, got.PendingApprovals)
	}
	codes := make([]int, 10)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range codes {
		wg.Go(func() {
			<-gate
			code, _, err := ps[i%2].do(http.MethodPost, "/api/runs/"+rv.RunID+"/approvals/agent", map[string]string{"decision": "approve"})
			if err != nil {
				t.Error(err)
			}
			codes[i] = code
		})
	}
	close(gate)
	wg.Wait()
	wins := 0
	for _, c := range codes {
		if c == http.StatusOK {
			wins++
		}
	}
	if wins != 1 {
		t.Fatalf("%d answers won (%v), want 1", wins, codes)
	}
	// The winning answer is accepted before the driver resumes the run.
	if got = a.waitEnd(t, rv.RunID, 60*time.Second); got.Status != engine.StatusCompleted {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	evs := a.events(t, rv.RunID)
	_, results := toolEvents(evs)
	if len(results) != 1 {
		t.Errorf("%d tool results, want 1", len(results))
	}
	var d struct {
		Tool string `json:"tool"`
		OK   bool   `json:"ok"`
	}
	_ = json.Unmarshal(results[0].Data, &d)
	if d.Tool != "Write" || !d.OK {
		t.Errorf("result %s", results[0].Data)
	}
}

// TestServeKillDuringForkedRun: a run forked from its third agent reuses
// the first two; serve is SIGKILLed while the fork's third agent is in
// flight; after the restart the fork completes and the first two agents
// were still called only by the parent run.
func TestServeKillDuringForkedRun(t *testing.T) {
	t.Parallel()
	const key = "forked"
	h := newHarness(t)
	h.env = append(h.env, "SWITCHYARD_LEASE_TTL="+ownerLeaseTTL.String())
	inFlight := make(chan struct{})
	var once sync.Once
	h.llm.setFault(key, func(c llmCall, attempt int) (fakeopenai.Reply, bool) {
		if c.node == "c" && attempt == 2 { // the fork's first call of c: held until serve dies
			once.Do(func() { close(inFlight) })
			return fakeopenai.Reply{Text: "never", Latency: 10 * time.Minute}, true
		}
		return fakeopenai.Reply{}, false
	})
	p := h.start()
	parent := p.startGraph(t, chainGraph(key, "a", "b", "c"), "")
	if rv := p.waitRun(t, parent, 60*time.Second); rv.Status != engine.StatusCompleted {
		t.Fatalf("parent %s %s", rv.Status, rv.Error)
	}
	var fork runView
	p.must(t, http.MethodPost, "/api/runs/"+parent+"/fork", map[string]any{"nodeId": "c"}, http.StatusCreated, &fork)
	select {
	case <-inFlight:
	case <-time.After(90 * time.Second):
		t.Fatalf("the fork's c never ran:\n%s", p.stderr)
	}
	p.kill()
	p2 := h.start()
	final := p2.waitRun(t, fork.RunID, 90*time.Second)
	if final.Status != engine.StatusCompleted {
		t.Fatalf("fork %s %s\n%s", final.Status, final.Error, p2.stderr)
	}
	if n := len(h.llm.callsOf(key, "a")); n != 1 {
		t.Errorf("a called %d times: the fork must reuse it, across the restart too", n)
	}
	if n := len(h.llm.callsOf(key, "b")); n != 1 {
		t.Errorf("b called %d times", n)
	}
	if n := len(h.llm.callsOf(key, "c")); n != 3 {
		t.Errorf("c called %d times, want 3 (parent, the killed fork, its rerun)", n)
	}
	checkGapless(t, fork.RunID, p2.events(t, fork.RunID))
	p2.stop(t)
}
