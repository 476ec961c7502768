package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/yamldir"
	"github.com/switchyard/switchyard/yamlflow"
)

// yamlProjection is the graph of a YAML workflow or run as the API gives it.
type yamlProjection struct {
	Nodes []struct {
		ID       string                  `json:"id"`
		Type     string                  `json:"type"`
		Position graph.Position          `json:"position"`
		Data     yamlflow.CanvasNodeData `json:"data"`
	} `json:"nodes"`
	Edges []yamlflow.CanvasEdge `json:"edges"`
}

func (p *yamlProjection) node(t *testing.T, id string) yamlflow.CanvasNodeData {
	t.Helper()
	for _, n := range p.Nodes {
		if n.ID == id {
			return n.Data
		}
	}
	t.Fatalf("no node %q in projection %+v", id, p)
	return yamlflow.CanvasNodeData{}
}

type yamlWorkflowJSON struct {
	Workflow
	Graph *yamlProjection `json:"graph"`
}

type yamlRunJSON struct {
	runJSON
	Graph *yamlProjection `json:"graph"`
}

const greeterYAML = `name: Greeter
description: Says hello, then shouts it
nodes:
  - id: hello
    bash: |
      # greet
      printf 'hello %s' "$ARGUMENTS"
  - id: shout
    depends_on: [hello]
    bash: printf '%s!' $hello.output
`

// brokenYAML has an unknown dependency (an error, line 8) and an AI field
// on a bash node (a warning, line 6).
const brokenYAML = `name: Broken
description: does not load
nodes:
  - id: a
    bash: echo hi
    model: gpt-5
  - id: b
    depends_on: [missing]
    bash: echo b
`

// writeFiles writes files (slash paths relative to dir) into dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newYAMLEnv is a server whose workflow source is a temporary folder
// holding files; runs work in a temporary directory.
func newYAMLEnv(t *testing.T, files map[string]string, opts ...func(*envOpts)) (*env, *YAMLWorkflows, string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	src, err := NewYAMLWorkflows(dir, YAMLOptions{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	v := newEnv(t, append(opts, func(o *envOpts) { o.source = src })...)
	return v, src, dir
}

func TestYAMLWorkflowsListedBesideDrawn(t *testing.T) {
	v, _, _ := newYAMLEnv(t, map[string]string{
		"greeter.yaml":          greeterYAML,
		"team/nested flow.yml":  strings.Replace(greeterYAML, "Greeter", "Nested", 1),
		"broken.yaml":           brokenYAML,
		"nameless.yaml":         "description: no name\nnodes:\n  - id: a\n    bash: echo\n",
		".hidden/secret.yaml":   greeterYAML,
		"team/.draft.yaml":      greeterYAML,
		"notes.txt":             "not a workflow",
		"team/deeper/readme.md": "# no",
	}, func(o *envOpts) { o.noLLM = true })
	var drawn wfJSON
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "Drawn", "graph": threeNodeGraph()}, &drawn)

	var list []Workflow
	v.must(http.StatusOK, "GET", "/api/workflows", nil, &list)
	byID := map[string]Workflow{}
	for _, w := range list {
		byID[w.ID] = w
	}
	if len(list) != 5 {
		t.Fatalf("listed %d workflows, want drawn + 4 YAML files: %+v", len(list), list)
	}
	if w, ok := byID[drawn.ID]; !ok || w.Kind != engine.KindGraph || w.ReadOnly {
		t.Fatalf("drawn workflow listed as %+v", w)
	}
	cases := []struct {
		id, name, path string
		errors         int
	}{
		{"yaml.greeter.yaml", "Greeter", "greeter.yaml", 0},
		{"yaml.team__nested_20flow.yml", "Nested", "team/nested flow.yml", 0},
		{"yaml.broken.yaml", "Broken", "broken.yaml", 1},
		{"yaml.nameless.yaml", "nameless", "nameless.yaml", 1},
	}
	for _, c := range cases {
		w, ok := byID[c.id]
		if !ok {
			t.Errorf("%s not listed (ids %v)", c.id, keys(byID))
			continue
		}
		if w.Kind != engine.KindYAML || !w.ReadOnly || w.Name != c.name || w.Source != "" || w.Graph != nil ||
			!strings.HasSuffix(w.Path, filepath.FromSlash(c.path)) || w.Version != 1 || w.UpdatedAt.IsZero() {
			t.Errorf("%s listed as %+v", c.id, w)
		}
		if len(w.Problems) != c.errors {
			t.Errorf("%s listed with problems %+v, want %d errors", c.id, w.Problems, c.errors)
		}
		for _, p := range w.Problems {
			if !p.IsError() {
				t.Errorf("%s: a list carries errors only, got %+v", c.id, p)
			}
		}
	}
	if p := byID["yaml.broken.yaml"].Problems; len(p) == 1 &&
		(p[0].Code != "unknown_dependency" || p[0].NodeID != "b" || !strings.Contains(p[0].Message, "broken.yaml:8:")) {
		t.Errorf("broken.yaml problem %+v", p[0])
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestGetYAMLWorkflow(t *testing.T) {
	v, _, dir := newYAMLEnv(t, map[string]string{"greeter.yaml": greeterYAML, "broken.yaml": brokenYAML},
		func(o *envOpts) { o.noLLM = true })

	var w yamlWorkflowJSON
	v.must(http.StatusOK, "GET", "/api/workflows/yaml.greeter.yaml", nil, &w)
	if w.Source != greeterYAML || w.Name != "Greeter" || w.Description != "Says hello, then shouts it" ||
		!w.ReadOnly || w.Kind != "yaml" || w.Path != "greeter.yaml" || len(w.Problems) != 0 {
		t.Fatalf("workflow %+v", w.Workflow)
	}
	if w.Graph == nil || len(w.Graph.Nodes) != 2 || len(w.Graph.Edges) != 1 {
		t.Fatalf("graph %+v", w.Graph)
	}
	if d := w.Graph.node(t, "hello"); d.Kind != "bash" || d.Label != "hello" || d.Detail != "# greet" {
		t.Errorf("hello data %+v", d)
	}
	if e := w.Graph.Edges[0]; e.Source != "hello" || e.Target != "shout" || e.SourceHandle != "output" || e.TargetHandle != "input" || e.ID == "" {
		t.Errorf("edge %+v", e)
	}

	// A broken file: its source, the graph of what did load, and every
	// problem (errors and warnings) with file:line.
	v.must(http.StatusOK, "GET", "/api/workflows/yaml.broken.yaml", nil, &w)
	if w.Source != brokenYAML || w.Graph == nil || len(w.Graph.Nodes) != 2 || len(w.Graph.Edges) != 0 {
		t.Fatalf("broken workflow %+v graph %+v", w.Workflow, w.Graph)
	}
	codes := map[string]string{}
	for _, p := range w.Problems {
		codes[p.Code] = p.Severity + " " + p.Message
	}
	if !strings.HasPrefix(codes["unknown_dependency"], "error ") || !strings.Contains(codes["unknown_dependency"], "broken.yaml:8:") ||
		!strings.HasPrefix(codes["ai_field_ignored"], "warning ") || !strings.Contains(codes["ai_field_ignored"], "broken.yaml:6:") {
		t.Fatalf("problems %+v", w.Problems)
	}

	// Edits show at once, in GET and in the list.
	writeFiles(t, dir, map[string]string{"greeter.yaml": strings.Replace(greeterYAML, "name: Greeter", "name: Greeter two", 1) + "  - id: third\n    depends_on: [shout]\n    bash: echo 3\n"})
	v.must(http.StatusOK, "GET", "/api/workflows/yaml.greeter.yaml", nil, &w)
	if w.Name != "Greeter two" || len(w.Graph.Nodes) != 3 {
		t.Fatalf("after edit: %+v", w.Workflow)
	}
	var list []Workflow
	v.must(http.StatusOK, "GET", "/api/workflows", nil, &list)
	found := false
	for _, l := range list {
		found = found || l.ID == "yaml.greeter.yaml" && l.Name == "Greeter two"
	}
	if !found {
		t.Fatalf("list after edit %+v", list)
	}

	// Unknown, deleted and malformed ids; files cannot be saved or deleted.
	for _, id := range []string{"yaml.nope.yaml", "yaml.greeter", "yaml.greeter.yaml_2", "yaml.___2E_2E__x.yaml"} {
		r := v.request("GET", "/api/workflows/"+id, nil)
		if r.status != http.StatusNotFound {
			t.Errorf("GET %s: %d %s", id, r.status, r.body)
		}
	}
	r := v.request("PUT", "/api/workflows/yaml.greeter.yaml", map[string]any{"name": "x", "version": 1})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "read-only") {
		t.Errorf("PUT: %d %s", r.status, r.body)
	}
	r = v.request("DELETE", "/api/workflows/yaml.greeter.yaml", nil)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "read-only") {
		t.Errorf("DELETE: %d %s", r.status, r.body)
	}
	if _, err := os.Stat(filepath.Join(dir, "greeter.yaml")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "greeter.yaml"))
	v.must(http.StatusNotFound, "GET", "/api/workflows/yaml.greeter.yaml", nil, nil)
}

func TestBrokenYAMLWorkflowRefusedOnRun(t *testing.T) {
	v, _, _ := newYAMLEnv(t, map[string]string{"broken.yaml": brokenYAML, "syntax.yaml": "name: [unclosed\n"},
		func(o *envOpts) { o.noLLM = true })
	for _, c := range []struct{ id, code, where string }{
		{"yaml.broken.yaml", "unknown_dependency", "broken.yaml:8:"},
		{"yaml.syntax.yaml", "yaml_syntax", "syntax.yaml:"},
	} {
		r := v.request("POST", "/api/runs", map[string]any{"workflowId": c.id})
		if r.status != http.StatusBadRequest {
			t.Fatalf("%s: status %d %s", c.id, r.status, r.body)
		}
		var body errorBody
		r.decode(t, &body)
		if body.Error.Code != CodeInvalidGraph || len(body.Error.Problems) == 0 || body.Error.Problems[0].Code != c.code ||
			!strings.Contains(body.Error.Message, c.where) || !strings.Contains(body.Error.Problems[0].Message, c.where) {
			t.Fatalf("%s: error %+v", c.id, body.Error)
		}
	}
	// The syntax error is listed too, with the name taken from the file.
	var list []Workflow
	v.must(http.StatusOK, "GET", "/api/workflows", nil, &list)
	if len(list) != 2 || list[0].Problems == nil || list[1].Problems == nil {
		t.Fatalf("list %+v", list)
	}
	if runs, _ := v.st.ListRuns(context.Background(), engine.RunFilter{}); len(runs) != 0 {
		t.Fatalf("a broken file started %d runs", len(runs))
	}
	v.must(http.StatusNotFound, "POST", "/api/runs", map[string]any{"workflowId": "yaml.gone.yaml"}, nil)
}

func TestRunYAMLWorkflowOverHTTPAndWebsocket(t *testing.T) {
	v, src, _ := newYAMLEnv(t, map[string]string{"greeter.yaml": greeterYAML}, func(o *envOpts) { o.noLLM = true })
	statuses := v.mustDial("/api/ws")
	waitFor(t, "the status subscriber", func() bool { _, n := v.srv.hub.subscriberCounts(); return n == 1 })
	var run yamlRunJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"workflowId": "yaml.greeter.yaml", "input": "world"}, &run)
	if run.RunID == "" || run.WorkflowID != "yaml.greeter.yaml" || run.Input != "world" || run.Graph == nil || len(run.Graph.Nodes) != 2 {
		t.Fatalf("created run %+v graph %+v", run.runJSON, run.Graph)
	}
	c := v.mustDial("/api/runs/" + run.RunID + "/ws?after=0")
	evs, err := readEvents(c, 30*time.Second)
	if closeCode(err) != websocket.CloseNormalClosure {
		t.Fatalf("websocket ended with %v after %d events", err, len(evs))
	}
	checkSeqs(t, evs, 0)
	// The run list's status stream names the YAML workflow too.
	for {
		_ = statuses.SetReadDeadline(time.Now().Add(30 * time.Second))
		var m statusMsg
		if err := statuses.ReadJSON(&m); err != nil {
			t.Fatalf("status stream: %v", err)
		}
		if m.RunID != run.RunID {
			continue
		}
		if m.WorkflowID != "yaml.greeter.yaml" {
			t.Fatalf("status message %+v: workflowId should name the YAML workflow", m)
		}
		if m.Status == engine.StatusCompleted {
			break
		}
	}
	ends := map[string]bool{}
	for _, ev := range evs {
		if ev.Type == engine.EvStepEnd {
			ends[ev.NodeID] = true
		}
	}
	last := evs[len(evs)-1]
	if !ends["hello"] || !ends["shout"] || last.Type != engine.EvRunStatus || last.Content != string(engine.StatusCompleted) {
		t.Fatalf("events %+v", evs)
	}

	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
	if run.Status != engine.StatusCompleted || run.Outputs["hello"] != "hello world" || run.Outputs["shout"] != "hello world!" ||
		run.WorkflowID != "yaml.greeter.yaml" || run.node("shout").Status != "completed" {
		t.Fatalf("finished run %+v", run.runJSON)
	}
	if run.Graph == nil || run.Graph.node(t, "shout").Kind != "bash" {
		t.Fatalf("run graph %+v", run.Graph)
	}
	// Stored with its workflow id (the file's); the definition names the
	// file too.
	stored, err := v.st.GetRun(context.Background(), run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.WorkflowID != "yaml.greeter.yaml" || src.WorkflowIDOfRun(stored) != "yaml.greeter.yaml" {
		t.Fatalf("stored run workflowId %q, source id %q", stored.WorkflowID, src.WorkflowIDOfRun(stored))
	}
	// The compatibility API shows the YAML run's DAG as its workflow.
	var compat struct {
		Workflow *struct {
			Nodes []struct {
				ID string `json:"id"`
			} `json:"nodes"`
		} `json:"workflow"`
	}
	v.must(http.StatusOK, "GET", "/api/run/"+run.RunID, nil, &compat)
	if compat.Workflow == nil || len(compat.Workflow.Nodes) != 2 {
		t.Fatalf("compat workflow of a YAML run: %+v", compat.Workflow)
	}
	// The run's directory is the source's WorkDir.
	if stored.WorkDir != src.f.WorkDir() {
		t.Fatalf("run worked in %q, want %q", stored.WorkDir, src.f.WorkDir())
	}
}

// gateYAML has both kinds of gate: an approval with on_reject and an
// interactive loop.
const approvalYAML = `name: Gate
description: plan, approve, act
nodes:
  - id: plan
    prompt: "plan $ARGUMENTS"
  - id: gate
    depends_on: [plan]
    approval:
      message: "Approve the plan? $plan.output"
      capture_response: true
      on_reject:
        prompt: "Revise because: $REJECTION_REASON"
        max_attempts: 3
  - id: after
    depends_on: [gate]
    bash: printf '%s' $gate.output
`

const loopYAML = `name: Chat
description: an interactive loop
nodes:
  - id: chat
    loop:
      prompt: "draft [$LOOP_PREV_OUTPUT] input [$LOOP_USER_INPUT]"
      until: DONE
      max_iterations: 4
      interactive: true
      gate_message: "Review: $LOOP_PREV_OUTPUT"
  - id: after
    depends_on: [chat]
    bash: printf %s $chat.output
`

// pausedAt waits for a run to pause and returns it, checking it waits at
// nodeID with prompt.
func (v *env) pausedAt(runID, nodeID, prompt string) yamlRunJSON {
	v.t.Helper()
	v.wait(runID)
	var run yamlRunJSON
	v.must(http.StatusOK, "GET", "/api/runs/"+runID, nil, &run)
	if run.Status != engine.StatusPaused || !run.WaitingForInput || len(run.PendingApprovals) != 1 ||
		run.PendingApprovals[0].NodeID != nodeID || run.PendingApprovals[0].Prompt != prompt || run.node(nodeID).Status != "waiting" {
		v.t.Fatalf("run %s: %+v, want paused at %s with %q", runID, run.runJSON, nodeID, prompt)
	}
	return run
}

func TestYAMLApprovalGateOverHTTP(t *testing.T) {
	v, _, _ := newYAMLEnv(t, map[string]string{"gate.yaml": approvalYAML})
	var run yamlRunJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"workflowId": "yaml.gate.yaml", "input": "x"}, &run)
	paused := v.pausedAt(run.RunID, "gate", "Approve the plan? echo: plan x")
	if !paused.Graph.node(t, "gate").Gate || paused.Graph.node(t, "gate").Detail != "Approve the plan? $plan.output" {
		t.Errorf("gate node %+v", paused.Graph.node(t, "gate"))
	}

	// Bad answers change nothing.
	if r := v.request("POST", "/api/runs/"+run.RunID+"/approvals/gate", map[string]any{"decision": "maybe"}); r.status != http.StatusBadRequest || r.errCode(t) != CodeInvalidDecision {
		t.Fatalf("bad decision: %d %s", r.status, r.body)
	}
	if r := v.request("POST", "/api/runs/"+run.RunID+"/approvals/plan", map[string]any{"decision": "approve"}); r.status != http.StatusConflict {
		t.Fatalf("answering a node that is not waiting: %d %s", r.status, r.body)
	}

	// Reject: the on_reject prompt runs with the reason, then it asks again.
	v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/approvals/gate", map[string]any{"decision": "reject", "note": "too vague"}, nil)
	v.pausedAt(run.RunID, "gate", "Approve the plan? echo: plan x")
	if last, ok := v.fake.LastRequest(); !ok || last.LastUserMessage() != "Revise because: too vague" {
		t.Fatalf("on_reject prompt %q", last.LastUserMessage())
	}
	// Approve: the note is the gate's output (capture_response).
	v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/approvals/gate", map[string]any{"decision": "approve", "note": "ship it"}, nil)
	v.wait(run.RunID)
	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
	if run.Status != engine.StatusCompleted || run.Outputs["after"] != "ship it" || len(run.PendingApprovals) != 0 {
		t.Fatalf("run %+v", run.runJSON)
	}
	var evs []engine.Event
	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID+"/events", nil, &evs)
	waits := 0
	for _, ev := range evs {
		if ev.NodeID == "gate" && ev.Type == engine.EvWaitInput {
			waits++
		}
	}
	if waits != 2 {
		t.Fatalf("%d wait_input events on the gate, want 2", waits)
	}
}

func TestYAMLInteractiveLoopGateOverHTTP(t *testing.T) {
	v, _, _ := newYAMLEnv(t, map[string]string{"chat.yaml": loopYAML})

	t.Run("approve continues with the note", func(t *testing.T) {
		v := v.with(t)
		v.fake.Enqueue(fakeopenai.Reply{Text: "v1"}, fakeopenai.Reply{Text: "v2 DONE"})
		var run yamlRunJSON
		v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"workflowId": "yaml.chat.yaml"}, &run)
		paused := v.pausedAt(run.RunID, "chat", "Review: v1")
		if d := paused.Graph.node(t, "chat"); d.Kind != "loop" || !d.Gate || !strings.Contains(d.Detail, "interactive") {
			t.Errorf("loop node %+v", d)
		}
		v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/approvals/chat", map[string]any{"decision": "approve", "note": "shorter"}, nil)
		v.wait(run.RunID)
		v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
		if run.Status != engine.StatusCompleted || run.Outputs["after"] != "v2" {
			t.Fatalf("run %+v", run.runJSON)
		}
		if last, _ := v.fake.LastRequest(); last.LastUserMessage() != "draft [v1] input [shorter]" {
			t.Fatalf("second iteration prompt %q", last.LastUserMessage())
		}
	})
	t.Run("reject stops the run", func(t *testing.T) {
		v := v.with(t)
		v.fake.Enqueue(fakeopenai.Reply{Text: "v1"})
		var run yamlRunJSON
		v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"workflowId": "yaml.chat.yaml"}, &run)
		v.pausedAt(run.RunID, "chat", "Review: v1")
		v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/approvals/chat", map[string]any{"decision": "reject", "note": "wrong direction"}, nil)
		v.wait(run.RunID)
		v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
		if run.Status != engine.StatusCancelled || !strings.Contains(run.Error, "wrong direction") || run.node("after").Status == "completed" {
			t.Fatalf("run %+v", run.runJSON)
		}
		// A second answer finds nothing waiting.
		if r := v.request("POST", "/api/runs/"+run.RunID+"/approvals/chat", map[string]any{"decision": "approve"}); r.status != http.StatusConflict {
			t.Fatalf("second answer: %d %s", r.status, r.body)
		}
	})
}

func TestRunHistoryOfYAMLWorkflow(t *testing.T) {
	v, _, dir := newYAMLEnv(t, map[string]string{
		"a.yaml":       greeterYAML,
		"sub/b.yaml":   greeterYAML,
		"sub/bad.yaml": "name: bad\ndescription: fails\nnodes:\n  - id: x\n    bash: exit 3\n",
	}, func(o *envOpts) { o.noLLM = true })
	start := func(id string) string {
		var run runJSON
		v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"workflowId": id}, &run)
		v.wait(run.RunID)
		return run.RunID
	}
	var aRuns []string
	for i := 0; i < 5; i++ {
		aRuns = append(aRuns, start("yaml.a.yaml"))
		start("yaml.sub__b.yaml")
	}
	failed := start("yaml.sub__bad.yaml")
	var drawn wfJSON
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "Drawn", "graph": noAgentGraph()}, &drawn)
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"workflowId": drawn.ID}, nil)
	// The same file run from outside the folder is not its run.
	outside := filepath.Join(t.TempDir(), "a.yaml")
	writeFiles(t, filepath.Dir(outside), map[string]string{"a.yaml": greeterYAML})
	other, err := v.e.StartYAML(context.Background(), outside, []byte(greeterYAML), engine.StartOptions{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	v.wait(other.ID)

	list := func(q string) []runJSON {
		var out []runJSON
		v.must(http.StatusOK, "GET", "/api/runs?"+q, nil, &out)
		return out
	}
	got := list("workflowId=yaml.a.yaml")
	if len(got) != 5 {
		t.Fatalf("%d runs of a.yaml, want 5: %+v", len(got), got)
	}
	for i, r := range got {
		if r.RunID != aRuns[4-i] || r.WorkflowID != "yaml.a.yaml" || r.Status != engine.StatusCompleted {
			t.Fatalf("run %d: %+v, want %s (newest first)", i, r, aRuns[4-i])
		}
	}
	// Paging as the UI does: limit, then before = the last createdAt.
	page1 := list("workflowId=yaml.a.yaml&limit=2")
	page2 := list("workflowId=yaml.a.yaml&limit=2&before=" + queryEscape(page1[1].CreatedAt.Format(time.RFC3339Nano)))
	page3 := list("workflowId=yaml.a.yaml&limit=2&before=" + queryEscape(page2[1].CreatedAt.Format(time.RFC3339Nano)))
	var paged []string
	for _, p := range [][]runJSON{page1, page2, page3} {
		for _, r := range p {
			paged = append(paged, r.RunID)
		}
	}
	if fmt.Sprint(paged) != fmt.Sprint([]string{aRuns[4], aRuns[3], aRuns[2], aRuns[1], aRuns[0]}) {
		t.Fatalf("paged %v, want %v", paged, aRuns)
	}
	if got := list("workflowId=yaml.sub__b.yaml"); len(got) != 5 {
		t.Fatalf("%d runs of sub/b.yaml", len(got))
	}
	if got := list("workflowId=yaml.sub__bad.yaml&status=failed"); len(got) != 1 || got[0].RunID != failed {
		t.Fatalf("failed runs of bad.yaml: %+v", got)
	}
	if got := list("workflowId=yaml.sub__bad.yaml&status=completed"); len(got) != 0 {
		t.Fatalf("completed runs of bad.yaml: %+v", got)
	}
	if got := list("workflowId=yaml.never.yaml"); len(got) != 0 {
		t.Fatalf("runs of an unknown file: %+v", got)
	}
	if got := list("workflowId=" + drawn.ID); len(got) != 1 || got[0].WorkflowID != drawn.ID {
		t.Fatalf("drawn workflow's runs: %+v", got)
	}
	// The unfiltered list names each YAML run's workflow; the outside one
	// has none.
	all := list("limit=100")
	if len(all) != 13 {
		t.Fatalf("%d runs in all", len(all))
	}
	for _, r := range all {
		if r.RunID == other.ID && r.WorkflowID != "" {
			t.Errorf("a run of a file outside the folder is named %q", r.WorkflowID)
		}
		if r.RunID != other.ID && r.WorkflowID == "" {
			t.Errorf("run %s has no workflow id", r.RunID)
		}
	}
	// History outlives the file.
	os.Remove(filepath.Join(dir, "a.yaml"))
	if got := list("workflowId=yaml.a.yaml"); len(got) != 5 {
		t.Fatalf("%d runs of a deleted file", len(got))
	}
}

// TestRunHistoryScanSkipsNone: runs created in the same microsecond across
// page boundaries are all found.
func TestRunHistoryScanSkipsNone(t *testing.T) {
	v, src, dir := newYAMLEnv(t, map[string]string{"a.yaml": greeterYAML}, func(o *envOpts) { o.noLLM = true })
	def, _ := json.Marshal(map[string]any{"file": filepath.Join(dir, "a.yaml"), "source": greeterYAML})
	at := time.Now().UTC().Truncate(time.Microsecond)
	want := 0
	for i := 0; i < 290; i++ {
		r := &engine.Run{ID: newID(), Kind: engine.KindYAML, Definition: def, Status: engine.StatusCompleted,
			PendingApprovals: []engine.PendingApproval{}, CreatedAt: at.Add(-time.Duration(i/100) * time.Microsecond), UpdatedAt: at}
		if i%3 == 0 {
			r.Definition = json.RawMessage(`{"file":"/elsewhere/a.yaml","source":"x"}`)
		} else {
			want++
		}
		if err := v.st.CreateRun(context.Background(), r, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := v.srv.listSourceRuns(context.Background(), src, engine.RunFilter{WorkflowID: "yaml.a.yaml", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.ID] {
			t.Fatalf("run %s listed twice", r.ID)
		}
		seen[r.ID] = true
	}
	if len(runs) != want {
		t.Fatalf("found %d runs, want %d", len(runs), want)
	}
}

func TestYAMLWorkflowIDs(t *testing.T) {
	cases := []struct{ rel, id string }{
		{"deploy.yaml", "yaml.deploy.yaml"},
		{"test-workflows/e2e-deterministic.yaml", "yaml.test-workflows__e2e-deterministic.yaml"},
		{"my_flow.yml", "yaml.my_5Fflow.yml"},
		{"a b/c.yaml", "yaml.a_20b__c.yaml"},
		{"ünï.yaml", "yaml._C3_BCn_C3_AF.yaml"},
	}
	for _, c := range cases {
		if got := YAMLWorkflowID(c.rel); got != c.id {
			t.Errorf("YAMLWorkflowID(%q) = %q, want %q", c.rel, got, c.id)
		}
		if !validWorkflowID(c.id) {
			t.Errorf("%q is not a valid workflow id", c.id)
		}
		if rel, ok := yamldir.ParseID(c.id); !ok || rel != c.rel {
			t.Errorf("yamldir.ParseID(%q) = %q, %v", c.id, rel, ok)
		}
	}
	for _, id := range []string{
		"yaml.", "yaml.deploy", "yaml.deploy.txt", "yaml..__x.yaml", "yaml...__x.yaml", "yaml.__x.yaml",
		"yaml.a____b.yaml", "yaml.a_2Fb.yaml", "yaml._2Ehidden.yaml", "yaml.x_2d.yaml", "yaml.x_4.yaml",
		"yaml.x_zz.yaml", "yaml.x_00.yaml", "deploy.yaml", "yaml.sub__.hid__x.yaml",
	} {
		if rel, ok := yamldir.ParseID(id); ok {
			t.Errorf("yamldir.ParseID(%q) = %q, want refused", id, rel)
		}
	}
	// Very long paths get a hashed id that fits and is found by scanning.
	long := strings.Repeat("very-long-folder-name/", 8) + "flow.yaml"
	id := YAMLWorkflowID(long)
	if len(id) > yamldir.MaxIDLen || !validWorkflowID(id) || id == YAMLWorkflowID(strings.Replace(long, "very", "vary", 1)) {
		t.Fatalf("long id %q", id)
	}
	if _, ok := yamldir.ParseID(id); ok {
		t.Fatalf("hashed id %q decoded", id)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{long: greeterYAML})
	src, err := NewYAMLWorkflows(dir, YAMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := src.GetWorkflow(context.Background(), id)
	if err != nil || w.Name != "Greeter" {
		t.Fatalf("GetWorkflow(long id) = %+v, %v", w, err)
	}
}

func TestNewYAMLWorkflowsFolder(t *testing.T) {
	if _, err := NewYAMLWorkflows("", YAMLOptions{}); err == nil {
		t.Error("empty folder accepted")
	}
	file := filepath.Join(t.TempDir(), "f.yaml")
	writeFiles(t, filepath.Dir(file), map[string]string{"f.yaml": greeterYAML})
	if _, err := NewYAMLWorkflows(file, YAMLOptions{}); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("a file as folder: %v", err)
	}
	// A folder that does not exist yet lists nothing, then what appears.
	dir := filepath.Join(t.TempDir(), "later")
	src, err := NewYAMLWorkflows(dir, YAMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := src.ListWorkflows(context.Background())
	if err != nil || len(ws) != 0 {
		t.Fatalf("missing folder: %v, %v", ws, err)
	}
	writeFiles(t, dir, map[string]string{"x.yaml": greeterYAML})
	if ws, err = src.ListWorkflows(context.Background()); err != nil || len(ws) != 1 || ws[0].ID != "yaml.x.yaml" {
		t.Fatalf("after creating it: %+v, %v", ws, err)
	}
	// A symlinked folder is followed; paths stay under the link.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	src, err = NewYAMLWorkflows(link, YAMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ws, err = src.ListWorkflows(context.Background()); err != nil || len(ws) != 1 || ws[0].Path != "x.yaml" {
		t.Fatalf("symlinked folder: %+v, %v", ws, err)
	}
}

func TestYAMLGraphLayout(t *testing.T) {
	src := `name: shapes
description: every kind
nodes:
  - id: cmd
    command: review-pr
  - id: ask
    prompt: "` + strings.Repeat("word ", 30) + `"
  - id: sh
    depends_on: [cmd, ask]
    bash: |

      echo first
      echo second
  - id: py
    depends_on: [ask]
    script: echo-py
    runtime: uv
  - id: lp
    depends_on: [sh]
    loop: {prompt: "go on", until: DONE, max_iterations: 3}
  - id: ok
    depends_on: [sh, py]
    trigger_rule: one_success
    when: "$sh.output != ''"
    approval: {message: "Ship?"}
  - id: stop
    depends_on: [ok, lp]
    always_run: true
    cancel: "stopped by $ok.output"
`
	wf, _, err := engine.ParseYAMLWorkflow("shapes.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	g := yamlflow.CanvasOf(wf)
	type want struct {
		kind, detail string
		x, y         float64
	}
	wants := map[string]want{
		"cmd":  {"command", "command: review-pr", 0, -0.5 * yamlflow.CanvasRowGap},
		"ask":  {"prompt", strings.Repeat("word ", 15) + "word…", 0, 0.5 * yamlflow.CanvasRowGap},
		"sh":   {"bash", "echo first", yamlflow.CanvasColumnGap, -0.5 * yamlflow.CanvasRowGap},
		"py":   {"script", "uv: echo-py", yamlflow.CanvasColumnGap, 0.5 * yamlflow.CanvasRowGap},
		"lp":   {"loop", "until DONE, max 3: go on", 2 * yamlflow.CanvasColumnGap, -0.5 * yamlflow.CanvasRowGap},
		"ok":   {"approval", "Ship?", 2 * yamlflow.CanvasColumnGap, 0.5 * yamlflow.CanvasRowGap},
		"stop": {"cancel", "stopped by $ok.output", 3 * yamlflow.CanvasColumnGap, 0},
	}
	if len(g.Nodes) != len(wants) || len(g.Edges) != 8 {
		t.Fatalf("%d nodes, %d edges", len(g.Nodes), len(g.Edges))
	}
	for _, n := range g.Nodes {
		w := wants[n.ID]
		if n.Type != "yaml" || n.Data.Label != n.ID || n.Data.Kind != w.kind || n.Data.Detail != w.detail ||
			n.Position.X != w.x || n.Position.Y != w.y {
			t.Errorf("node %s: %+v at %+v, want %+v", n.ID, n.Data, n.Position, w)
		}
	}
	// The inspector shows the whole text the detail is cut from.
	if got, want := g.Nodes[1].Data.Text, strings.TrimSpace(strings.Repeat("word ", 30)); got != want {
		t.Errorf("ask text %q, want the whole prompt %q", got, want)
	}
	if got := g.Nodes[2].Data.Text; got != "echo first\necho second" {
		t.Errorf("sh text %q, want the whole script", got)
	}
	if got := g.Nodes[5].Data.Text; got != "" {
		t.Errorf("ok text %q: a short message is all in the detail", got)
	}
	ok := g.Nodes[5].Data
	if ok.TriggerRule != "one_success" || ok.When != "$sh.output != ''" || !ok.Gate {
		t.Errorf("ok data %+v", ok)
	}
	if d := g.Nodes[2].Data; d.TriggerRule != "" || d.When != "" || d.Gate {
		t.Errorf("sh data %+v", d)
	}
	if !g.Nodes[6].Data.AlwaysRun {
		t.Errorf("stop data %+v", g.Nodes[6].Data)
	}
	// The JSON is a graph the UI reads: nodes with id, type, position,
	// data.label; edges with source, target and handles.
	var asGraph graph.Graph
	if err := json.Unmarshal(yamlflow.CanvasJSON(wf), &asGraph); err != nil {
		t.Fatal(err)
	}
	if asGraph.Edges[0].SourceHandle != graph.HandleOutput || asGraph.Edges[0].TargetHandle != graph.HandleInput {
		t.Fatalf("edges %+v", asGraph.Edges)
	}
}

// TestYAMLGraphOfBrokenWorkflows: partial workflows (cycles, unknown and
// duplicate ids) still project and lay out.
func TestYAMLGraphOfBrokenWorkflows(t *testing.T) {
	cases := map[string]string{
		"cycle":     "  - id: a\n    depends_on: [c]\n    bash: x\n  - id: b\n    depends_on: [a]\n    bash: x\n  - id: c\n    depends_on: [b]\n    bash: x\n",
		"self":      "  - id: a\n    depends_on: [a]\n    bash: x\n",
		"duplicate": "  - id: a\n    bash: x\n  - id: a\n    bash: y\n  - id: b\n    depends_on: [a, a, zz]\n    bash: z\n",
		"no id":     "  - bash: x\n  - id: b\n    bash: y\n",
		"no kind":   "  - id: a\n  - id: b\n    depends_on: [a]\n    loop: {}\n",
	}
	for name, nodes := range cases {
		t.Run(name, func(t *testing.T) {
			g := projectSource(t, "name: x\ndescription: y\nnodes:\n"+nodes)
			if g == nil || len(g.Nodes) == 0 {
				t.Fatalf("no projection")
			}
		})
	}
}

// projectSource parses src as the API does and checks the projection's
// invariants: unique ids, edges between listed nodes, no two nodes at one
// place.
func projectSource(t testing.TB, src string) *yamlflow.Canvas {
	wf := parsePartial(src)
	g := yamlflow.CanvasOf(wf)
	ids := map[string]bool{}
	at := map[graph.Position]string{}
	for _, n := range g.Nodes {
		if n.ID == "" || ids[n.ID] {
			t.Fatalf("node id %q empty or repeated", n.ID)
		}
		ids[n.ID] = true
		if other, taken := at[n.Position]; taken {
			t.Fatalf("nodes %s and %s both at %+v", other, n.ID, n.Position)
		}
		at[n.Position] = n.ID
	}
	for _, e := range g.Edges {
		if !ids[e.Source] || !ids[e.Target] || e.Source == e.Target {
			t.Fatalf("edge %+v", e)
		}
	}
	if _, err := json.Marshal(g); err != nil {
		t.Fatal(err)
	}
	return g
}

// parsePartial parses src as the API does, keeping what loaded of a
// workflow with errors.
func parsePartial(src string) *yamlflow.Workflow {
	wf, _, _ := yamlflow.Parse("fuzz.yaml", []byte(src))
	return wf
}

func FuzzYAMLGraph(f *testing.F) {
	f.Add(greeterYAML)
	f.Add(brokenYAML)
	f.Add(approvalYAML)
	f.Add(loopYAML)
	f.Add("name: x\ndescription: y\nnodes:\n  - id: a\n    depends_on: [b]\n    bash: x\n  - id: b\n    depends_on: [a]\n    bash: x\n")
	f.Fuzz(func(t *testing.T, src string) {
		projectSource(t, src)
	})
}

func FuzzYAMLWorkflowID(f *testing.F) {
	for _, s := range []string{"deploy.yaml", "a/b.yml", "my_flow.yaml", "yaml.a__b.yaml", "yaml._2E.yaml", "x/../y.yaml", "ü/ö.yaml"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id := YAMLWorkflowID(s)
		if !validWorkflowID(id) || !strings.HasPrefix(id, YAMLIDPrefix) {
			t.Fatalf("YAMLWorkflowID(%q) = %q: not a valid id", s, id)
		}
		if rel, ok := yamldir.ParseID(id); ok && rel != s {
			t.Fatalf("id %q of %q decodes to %q", id, s, rel)
		}
		// Any string as an id: what decodes encodes back to it and is a
		// path inside the folder.
		if rel, ok := yamldir.ParseID(s); ok {
			if YAMLWorkflowID(rel) != s || !filepath.IsLocal(rel) || strings.HasPrefix(rel, ".") || strings.Contains(rel, "/.") {
				t.Fatalf("yamldir.ParseID(%q) = %q", s, rel)
			}
		}
	})
}

// TestE2EDeterministicThroughAPI lists the Archon fixture folder and runs
// e2e-deterministic.yaml (bash, bun and uv scripts, when, trigger rules)
// through the API to completion.
func TestE2EDeterministicThroughAPI(t *testing.T) {
	fx := filepath.Join("..", "..", "shared", "fixtures", "archon")
	if _, err := os.Stat(fx); err != nil {
		t.Skipf("shared fixtures not found at %s (../shared is absent)", fx)
	}
	if _, err := exec.LookPath("bun"); err != nil {
		t.Skip("bun is not on PATH: install it with `npm install -g bun`")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH (the uv stand-in needs it)")
	}
	uvStandIn(t)
	fx, _ = filepath.Abs(fx)
	src, err := NewYAMLWorkflows(filepath.Join(fx, "workflows"), YAMLOptions{WorkDir: t.TempDir(),
		Start: []engine.YAMLOption{engine.WithScriptsDir(filepath.Join(fx, "scripts"))}})
	if err != nil {
		t.Fatal(err)
	}
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.source = src })
	const id = "yaml.test-workflows__e2e-deterministic.yaml"
	var list []Workflow
	v.must(http.StatusOK, "GET", "/api/workflows", nil, &list)
	found := false
	for _, w := range list {
		found = found || w.ID == id && w.Name == "e2e-deterministic" && len(w.Problems) == 0
	}
	if !found || len(list) < 10 {
		t.Fatalf("%s not listed among %d workflows", id, len(list))
	}
	var w yamlWorkflowJSON
	v.must(http.StatusOK, "GET", "/api/workflows/"+id, nil, &w)
	if len(w.Graph.Nodes) != 8 || w.Graph.node(t, "merge-node").TriggerRule != "one_success" {
		t.Fatalf("graph %+v", w.Graph)
	}
	var run yamlRunJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"workflowId": id}, &run)
	c := v.mustDial("/api/runs/" + run.RunID + "/ws")
	evs, err := readEvents(c, 2*time.Minute)
	if closeCode(err) != websocket.CloseNormalClosure || len(evs) == 0 {
		t.Fatalf("websocket: %v after %d events", err, len(evs))
	}
	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID, nil, &run)
	if run.Status != engine.StatusCompleted || !strings.HasSuffix(run.Outputs["verify-all"], "PASS: all deterministic nodes produced output") ||
		run.node("branch-false").Status != "skipped" || run.WorkflowID != id {
		for _, n := range run.Nodes {
			t.Logf("%s: %s %q %q", n.NodeID, n.Status, n.Output, n.Error)
		}
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
}

// uvStandIn puts a stand-in for uv first on PATH (uv cannot be installed
// on the test machines): `uv run [--with DEP]... [python] FILE ARGS` runs
// python3.
func uvStandIn(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	script := `#!/bin/sh
if [ "$1" != run ]; then echo "uv stand-in: only 'uv run' is supported" >&2; exit 2; fi
shift
while [ $# -gt 0 ]; do
	case "$1" in
	--with) shift 2 ;;
	--*) shift ;;
	*) break ;;
	esac
done
if [ "$1" = python ] || [ "$1" = python3 ]; then shift; fi
exec python3 "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "uv"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// A workflow is listed, fetched and run only from inside the folder: a
// symlinked subfolder (not listed) or a symlinked file pointing outside
// (listed before) can be neither fetched nor run.
func TestYAMLWorkflowsRefuseSymlinksOut(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{"in.yaml": greeterYAML, "sub/ok.yaml": greeterYAML})
	writeFiles(t, outside, map[string]string{"secret.yaml": greeterYAML, "deep/x.yaml": greeterYAML})
	if err := os.Symlink(filepath.Join(outside, "deep"), filepath.Join(dir, "linked")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "out.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "in.yaml"), filepath.Join(dir, "alias.yaml")); err != nil {
		t.Fatal(err)
	}
	src, err := NewYAMLWorkflows(dir, YAMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := src.ListWorkflows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range ws {
		ids = append(ids, w.ID)
	}
	want := []string{YAMLWorkflowID("alias.yaml"), YAMLWorkflowID("in.yaml"), YAMLWorkflowID("sub/ok.yaml")}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("listed %v, want %v", ids, want)
	}
	for _, rel := range []string{"linked/x.yaml", "out.yaml", "../" + filepath.Base(outside) + "/secret.yaml"} {
		if _, err := src.GetWorkflow(context.Background(), YAMLWorkflowID(rel)); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("GetWorkflow(%s) = %v, want not found", rel, err)
		}
	}
	if _, err := src.GetWorkflow(context.Background(), YAMLWorkflowID("sub/ok.yaml")); err != nil {
		t.Errorf("a plain subfolder: %v", err)
	}
}

// A YAML workflow whose provider is not configured (claude without
// ANTHROPIC_API_KEY) or not shipped (pi) lists with the reason it cannot
// run, and starting it is refused with that reason; a broken file's
// reason is its first error.
func TestYAMLRunBlockerNamesTheReason(t *testing.T) {
	t.Parallel()
	var eng *engine.Engine
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"claude.yaml": "name: C\ndescription: d\nprovider: claude\nnodes:\n  - id: a\n    prompt: hi\n",
		"pi.yaml":     "name: P\ndescription: d\nnodes:\n  - id: a\n    provider: pi\n    prompt: hi\n",
		"fine.yaml":   greeterYAML,
		"broken.yaml": brokenYAML,
	})
	src, err := NewYAMLWorkflows(dir, YAMLOptions{WorkDir: t.TempDir(), Blocker: func(wf *yamlflow.Workflow) error { return eng.ProviderBlocker(wf) }})
	if err != nil {
		t.Fatal(err)
	}
	v := newEnv(t, func(o *envOpts) { o.source = src })
	eng = v.e
	var list []Workflow
	v.must(http.StatusOK, "GET", "/api/workflows", nil, &list)
	blockers := map[string]string{}
	for _, w := range list {
		blockers[w.ID] = w.RunBlocker
	}
	if !strings.Contains(blockers["yaml.claude.yaml"], "ANTHROPIC_API_KEY") || !strings.Contains(blockers["yaml.pi.yaml"], `provider "pi" is not supported`) ||
		blockers["yaml.fine.yaml"] != "" || !strings.Contains(blockers["yaml.broken.yaml"], "errors") {
		t.Fatalf("blockers %q", blockers)
	}
	var w Workflow
	v.must(http.StatusOK, "GET", "/api/workflows/yaml.claude.yaml", nil, &w)
	if w.RunBlocker != blockers["yaml.claude.yaml"] {
		t.Fatalf("GET blocker %q", w.RunBlocker)
	}
	var e errorBody
	v.must(http.StatusServiceUnavailable, "POST", "/api/runs", map[string]any{"workflowId": "yaml.claude.yaml"}, &e)
	if e.Error.Code != CodeNoLLM || !strings.Contains(e.Error.Message, "ANTHROPIC_API_KEY") {
		t.Fatalf("claude run: %+v", e.Error)
	}
	v.must(http.StatusBadRequest, "POST", "/api/runs", map[string]any{"workflowId": "yaml.pi.yaml"}, &e)
	if !strings.Contains(e.Error.Message, `"pi"`) {
		t.Fatalf("pi run: %+v", e.Error)
	}
}

// TestValidateYAMLResolvesIncludes: live validation of a file that
// includes a block of the workflows folder finds the block (no false
// include_not_found) and projects its nodes as a group.
func TestValidateYAMLResolvesIncludes(t *testing.T) {
	v, _, _ := newYAMLEnv(t, map[string]string{
		"block.yaml": "name: block\ndescription: b\nnodes:\n  - id: one\n    bash: echo one\n",
	})
	src := "name: main\ndescription: m\nnodes:\n  - id: first\n    bash: echo hi\n  - id: rev\n    include: block\n    depends_on: [first]\n"
	var out struct {
		Problems []struct {
			Code string `json:"code"`
		} `json:"problems"`
		Graph struct {
			Nodes []struct {
				ID   string         `json:"id"`
				Data map[string]any `json:"data"`
			} `json:"nodes"`
		} `json:"graph"`
	}
	v.must(http.StatusOK, "POST", "/api/yaml/validate", map[string]any{"path": "main.yaml", "source": src}, &out)
	for _, p := range out.Problems {
		if p.Code == "include_not_found" {
			t.Errorf("problems %+v", out.Problems)
		}
	}
	found := false
	for _, n := range out.Graph.Nodes {
		if n.ID == "rev__one" && n.Data["group"] == "rev" {
			found = true
		}
	}
	if !found {
		t.Errorf("the included node is not projected in its group: %+v", out.Graph.Nodes)
	}
}
