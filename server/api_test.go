package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

// legacyGraph is the AgentFlow shape: x/y on nodes, connections, an input node.
const legacyGraph = `{
  "nodes": [
    {"id": "s", "type": "start", "x": 10, "y": 20, "data": {"initialInput": "go"}},
    {"id": "w", "type": "agent", "x": 200, "y": 20, "data": {"agentName": "Writer", "label": "kept"}},
    {"id": "q", "type": "input", "x": 400, "y": 20, "data": {"prompt": "ok?"}},
    {"id": "p", "type": "agent", "x": 600, "y": 20, "data": {"agentName": "Pub"}},
    {"id": "end", "type": "end", "x": 800, "y": 20, "data": {}}
  ],
  "connections": [
    {"source": "s", "target": "w"},
    {"source": "w", "target": "q"},
    {"source": "q", "target": "p", "sourceHandle": "approve"},
    {"source": "p", "target": "end"}
  ]
}`

type wfJSON struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Kind        string          `json:"kind"`
	Version     int             `json:"version"`
	Graph       *graph.Graph    `json:"graph"`
	Problems    []graph.Problem `json:"problems"`
}

func TestWorkflowCRUD(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })

	// Import in the legacy shape: stored normalized, with the warnings.
	var created wfJSON
	r := v.must(http.StatusCreated, "POST", "/api/workflows",
		fmt.Sprintf(`{"name":"Poem","description":"d","graph":%s}`, legacyGraph), &created)
	if created.ID == "" || created.Version != 1 || created.Kind != "graph" || created.Name != "Poem" {
		t.Fatalf("created %+v", created)
	}
	if loc := r.header.Get("Location"); loc != "/api/workflows/"+created.ID {
		t.Errorf("Location %q", loc)
	}
	if created.Graph == nil || created.Graph.NodeByID("end") != nil || created.Graph.NodeByID("q").Type != graph.TypeApproval {
		t.Fatalf("graph not normalized: %+v", created.Graph)
	}
	if !hasCode(created.Problems, graph.CodeLegacyEndRemoved) {
		t.Errorf("problems %+v lack %s", created.Problems, graph.CodeLegacyEndRemoved)
	}
	if string(created.Graph.NodeByID("w").Data.Extra["label"]) != `"kept"` {
		t.Errorf("unknown node data lost: %+v", created.Graph.NodeByID("w").Data)
	}

	// Export returns the current shape.
	var got wfJSON
	v.must(http.StatusOK, "GET", "/api/workflows/"+created.ID, nil, &got)
	if got.Graph == nil || len(got.Graph.Edges) != 3 || got.Graph.Edges[0].ID == "" || got.Graph.Nodes[0].Position.X != 10 {
		t.Fatalf("export %+v", got.Graph)
	}
	var raw map[string]any
	v.must(http.StatusOK, "GET", "/api/workflows/"+created.ID, nil, &raw)
	if _, legacy := raw["graph"].(map[string]any)["connections"]; legacy {
		t.Error("export kept the legacy connections")
	}

	// A graph with errors is saved anyway, with its problems.
	var saved wfJSON
	v.must(http.StatusOK, "PUT", "/api/workflows/"+created.ID,
		map[string]any{"name": "Poem 2", "graph": invalidGraph(), "version": 1}, &saved)
	if saved.Version != 2 || saved.Name != "Poem 2" || saved.Description != "d" || !hasCode(saved.Problems, graph.CodeNoStart) {
		t.Fatalf("saved %+v", saved)
	}

	// A stale version gets 409 and changes nothing.
	r = v.request("PUT", "/api/workflows/"+created.ID, map[string]any{"name": "Other tab", "graph": threeNodeGraph(), "version": 1})
	if r.status != http.StatusConflict || r.errCode(t) != CodeConflict || !strings.Contains(string(r.body), "version 2") {
		t.Fatalf("stale save: %d %s", r.status, r.body)
	}
	v.must(http.StatusOK, "GET", "/api/workflows/"+created.ID, nil, &got)
	if got.Name != "Poem 2" || got.Version != 2 {
		t.Fatalf("stale save changed the workflow: %+v", got)
	}

	// Versions.
	var versions []map[string]any
	v.must(http.StatusOK, "GET", "/api/workflows/"+created.ID+"/versions", nil, &versions)
	if len(versions) != 2 || versions[0]["version"].(float64) != 2 || versions[0]["graph"] != nil {
		t.Fatalf("versions %v", versions)
	}
	var v1 wfJSON
	v.must(http.StatusOK, "GET", "/api/workflows/"+created.ID+"/versions/1", nil, &v1)
	if v1.Name != "Poem" || v1.Graph == nil || v1.Graph.NodeByID("q") == nil {
		t.Fatalf("version 1 %+v", v1)
	}

	// List without graphs.
	var list []map[string]any
	v.must(http.StatusOK, "GET", "/api/workflows", nil, &list)
	if len(list) != 1 || list[0]["id"] != created.ID || list[0]["graph"] != nil {
		t.Fatalf("list %v", list)
	}

	v.must(http.StatusNoContent, "DELETE", "/api/workflows/"+created.ID, nil, nil)
	if r := v.request("GET", "/api/workflows/"+created.ID, nil); r.status != http.StatusNotFound || r.errCode(t) != CodeNotFound {
		t.Fatalf("after delete: %d %s", r.status, r.body)
	}
}

func hasCode(ps []graph.Problem, code string) bool {
	for _, p := range ps {
		if p.Code == code {
			return true
		}
	}
	return false
}

// TestAPIErrors is a table of every error status the API gives for bad
// input, with its code.
func TestAPIErrors(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.maxBody = 64 << 10 })
	var wf wfJSON
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "W", "graph": threeNodeGraph()}, &wf)
	var paused map[string]any
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": noAgentGraph()}, &paused)
	pausedID := paused["runId"].(string)
	v.wait(pausedID)
	unknownRun := newID()
	big := `{"name":"x","graph":{"nodes":[],"edges":[]},"description":"` + strings.Repeat("a", 70<<10) + `"}`

	cases := []struct {
		name, method, path string
		body               any
		status             int
		code               string
		contains           string
	}{
		{"malformed JSON says where", "POST", "/api/workflows", "{\n  \"name\": \"x\",\n  \"graph\": {]\n}", 400, CodeBadRequest, "line 3, column 13"},
		{"wrong JSON type says where", "POST", "/api/workflows", "{\"name\": 5}", 400, CodeBadRequest, "line 1, column 10"},
		{"trailing data", "POST", "/api/validate", `{"graph":{"nodes":[],"edges":[]}} {}`, 400, CodeBadRequest, "after the top-level value"},
		{"empty body", "POST", "/api/validate", "", 400, CodeBadRequest, "empty"},
		{"truncated body", "POST", "/api/validate", `{"graph":`, 400, CodeBadRequest, "line 1"},
		{"missing graph", "POST", "/api/validate", `{}`, 400, CodeBadRequest, "graph is required"},
		{"graph not an object", "POST", "/api/normalize", `{"graph":[1,2]}`, 400, CodeBadRequest, "graph"},
		{"missing name", "POST", "/api/workflows", map[string]any{"graph": threeNodeGraph()}, 400, CodeBadRequest, "name is required"},
		{"yaml kind not creatable", "POST", "/api/workflows", map[string]any{"name": "y", "kind": "yaml", "graph": threeNodeGraph()}, 400, CodeBadRequest, "kind"},
		{"body too large", "POST", "/api/workflows", big, 413, CodePayloadTooLarge, "larger than"},
		{"invalid workflow id", "GET", "/api/workflows/bad%20id", nil, 400, CodeBadRequest, "invalid workflow id"},
		{"unknown workflow", "GET", "/api/workflows/nope", nil, 404, CodeNotFound, "not found"},
		{"update unknown workflow", "PUT", "/api/workflows/nope", map[string]any{"version": 1, "name": "n"}, 404, CodeNotFound, ""},
		{"update without version", "PUT", "/api/workflows/" + wf.ID, map[string]any{"name": "n"}, 400, CodeBadRequest, "version is required"},
		{"update empty name", "PUT", "/api/workflows/" + wf.ID, map[string]any{"name": " ", "version": 1}, 400, CodeBadRequest, "name"},
		{"delete unknown workflow", "DELETE", "/api/workflows/nope", nil, 404, CodeNotFound, ""},
		{"versions of unknown workflow", "GET", "/api/workflows/nope/versions", nil, 404, CodeNotFound, ""},
		{"bad version number", "GET", "/api/workflows/" + wf.ID + "/versions/x", nil, 400, CodeBadRequest, "positive integer"},
		{"unknown version", "GET", "/api/workflows/" + wf.ID + "/versions/9", nil, 404, CodeNotFound, "no version 9"},
		{"invalid run id", "GET", "/api/runs/not-a-uuid!", nil, 400, CodeBadRequest, "invalid run id"},
		{"too long run id", "GET", "/api/runs/" + strings.Repeat("a", 65), nil, 400, CodeBadRequest, "invalid run id"},
		{"unknown run", "GET", "/api/runs/" + unknownRun, nil, 404, CodeNotFound, ""},
		{"events of unknown run", "GET", "/api/runs/" + unknownRun + "/events", nil, 404, CodeNotFound, ""},
		{"bad after", "GET", "/api/runs/" + pausedID + "/events?after=-1", nil, 400, CodeBadRequest, "after"},
		{"bad limit", "GET", "/api/runs?limit=0", nil, 400, CodeBadRequest, "limit"},
		{"bad status", "GET", "/api/runs?status=sleeping", nil, 400, CodeBadRequest, "status"},
		{"bad before", "GET", "/api/runs?before=yesterday", nil, 400, CodeBadRequest, "RFC 3339"},
		{"run with both", "POST", "/api/runs", map[string]any{"workflowId": wf.ID, "graph": threeNodeGraph()}, 400, CodeBadRequest, "exactly one"},
		{"run with neither", "POST", "/api/runs", map[string]any{"input": "x"}, 400, CodeBadRequest, "exactly one"},
		{"run invalid graph", "POST", "/api/runs", map[string]any{"graph": invalidGraph()}, 400, CodeInvalidGraph, "errors"},
		{"run unknown workflow", "POST", "/api/runs", map[string]any{"workflowId": "nope"}, 404, CodeNotFound, ""},
		{"bad decision", "POST", "/api/runs/" + pausedID + "/approvals/ok", map[string]any{"decision": "maybe"}, 400, CodeInvalidDecision, "approve"},
		{"decision on node not waiting", "POST", "/api/runs/" + pausedID + "/approvals/s", map[string]any{"decision": "approve"}, 409, CodeConflict, ""},
		{"decision on unknown run", "POST", "/api/runs/" + unknownRun + "/approvals/ok", map[string]any{"decision": "approve"}, 404, CodeNotFound, ""},
		{"continue a paused run", "POST", "/api/runs/" + pausedID + "/continue", nil, 409, CodeConflict, ""},
		{"cancel unknown run", "POST", "/api/runs/" + unknownRun + "/cancel", nil, 404, CodeNotFound, ""},
		{"unknown API route", "GET", "/api/nothing-here", nil, 404, CodeNotFound, "no API route"},
		{"method not allowed", "DELETE", "/api/config", nil, 405, CodeMethodNotAllowed, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := v.with(t).request(tc.method, tc.path, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if code := r.errCode(t); code != tc.code {
				t.Errorf("code %q, want %q", code, tc.code)
			}
			if !strings.Contains(string(r.body), tc.contains) {
				t.Errorf("message %s does not contain %q", r.body, tc.contains)
			}
		})
	}
}

func TestValidateAndNormalize(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	cases := []struct {
		name  string
		graph any
		valid bool
		code  string
	}{
		{"valid", threeNodeGraph(), true, ""},
		{"no start", invalidGraph(), false, graph.CodeNoStart},
		{"legacy shape", json.RawMessage(legacyGraph), true, graph.CodeLegacyEndRemoved},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var res validateResponse
			v.must(http.StatusOK, "POST", "/api/validate", map[string]any{"graph": tc.graph}, &res)
			if res.Valid != tc.valid || (tc.code != "" && !hasCode(res.Problems, tc.code)) {
				t.Fatalf("validate: %+v", res)
			}
			var norm struct {
				Graph    graph.Graph     `json:"graph"`
				Problems []graph.Problem `json:"problems"`
			}
			v.must(http.StatusOK, "POST", "/api/normalize", map[string]any{"graph": tc.graph}, &norm)
			for _, e := range norm.Graph.Edges {
				if e.ID == "" || e.SourceHandle == "" {
					t.Errorf("edge not normalized: %+v", e)
				}
			}
			if tc.code != "" && !hasCode(norm.Problems, tc.code) {
				t.Errorf("normalize problems %+v lack %s", norm.Problems, tc.code)
			}
		})
	}
}

func TestConfigHealthAndDefaultWorkflow(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var cfg configJSON
	r := v.must(http.StatusOK, "GET", "/api/config", nil, &cfg)
	if !cfg.LLMConfigured || cfg.DefaultModel == "" || len(cfg.Models) == 0 || len(cfg.Providers) == 0 ||
		strings.Join(cfg.ReasoningEfforts, ",") != "minimal,low,medium,high" {
		t.Fatalf("config %+v", cfg)
	}
	if strings.Contains(string(r.body), testAPIKey) {
		t.Fatal("config leaks the API key")
	}
	v.must(http.StatusOK, "GET", "/api/health", nil, nil)

	noLLM := newEnv(t, func(o *envOpts) { o.noLLM = true })
	noLLM.must(http.StatusOK, "GET", "/api/config", nil, &cfg)
	if cfg.LLMConfigured {
		t.Error("llmConfigured without an LLM")
	}

	// AgentFlow's shape (TestCompatContractDefaultWorkflow pins it), which
	// Switchyard reads as its legacy shape.
	g, _, err := graph.Decode(v.must(http.StatusOK, "GET", "/api/default-workflow", nil, nil).body)
	if err != nil || len(g.Edges) == 0 {
		t.Fatalf("default workflow: %v %+v", err, g)
	}
	types := map[string]int{}
	for _, n := range g.Nodes {
		types[n.Type]++
	}
	if types[graph.TypeStart] != 1 || types[graph.TypeAgent] < 2 || types[graph.TypeApproval] != 1 {
		t.Fatalf("default workflow nodes %v", types)
	}
	if probs := graph.Validate(g); graph.HasErrors(probs) || len(probs) > 0 {
		t.Fatalf("default workflow has problems: %+v", probs)
	}
}

// stubSource is a WorkflowSource such as the YAML folder.
type stubSource struct{}

func (stubSource) ListWorkflows(_ context.Context) ([]Workflow, error) {
	return []Workflow{{ID: "yaml.deploy", Name: "Deploy", Kind: "yaml", Version: 1, Path: "deploy.yaml", ReadOnly: true,
		Source: "name: deploy", CreatedAt: time.Now(), UpdatedAt: time.Now()}}, nil
}

func (stubSource) GetWorkflow(_ context.Context, id string) (*Workflow, error) {
	if id != "yaml.deploy" {
		return nil, engine.ErrNotFound
	}
	return &Workflow{ID: id, Name: "Deploy", Kind: "yaml", Version: 1, Source: "name: deploy", ReadOnly: true}, nil
}

func TestWorkflowSourceListedBesideDrawn(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.source = stubSource{} })
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "Drawn", "graph": threeNodeGraph()}, nil)
	var list []Workflow
	v.must(http.StatusOK, "GET", "/api/workflows", nil, &list)
	if len(list) != 2 {
		t.Fatalf("list %+v", list)
	}
	var yaml *Workflow
	for i := range list {
		if list[i].ID == "yaml.deploy" {
			yaml = &list[i]
		}
	}
	if yaml == nil || yaml.Kind != "yaml" || yaml.Source != "" || !yaml.ReadOnly {
		t.Fatalf("yaml workflow listed as %+v", yaml)
	}
	var one Workflow
	v.must(http.StatusOK, "GET", "/api/workflows/yaml.deploy", nil, &one)
	if one.Source != "name: deploy" {
		t.Fatalf("get from source: %+v", one)
	}
}

// TestConcurrentSavesOneWins: two tabs saving the same version at once —
// exactly one wins, the other gets 409.
func TestConcurrentSavesOneWins(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	var wf wfJSON
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "W", "graph": threeNodeGraph()}, &wf)
	const tabs = 8
	statuses := make([]int, tabs)
	var wg sync.WaitGroup
	for i := range tabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = v.request("PUT", "/api/workflows/"+wf.ID, map[string]any{"name": fmt.Sprint("tab", i), "version": 1}).status
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
	if ok != 1 || conflict != tabs-1 {
		t.Fatalf("statuses %v: want one 200 and %d 409", statuses, tabs-1)
	}
}

// TestNoSecretsAnywhere runs an agent graph and checks the API key shows
// up in no response, event or log line.
func TestNoSecretsAnywhere(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var run map[string]any
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": threeNodeGraph()}, &run)
	id := run["runId"].(string)
	v.wait(id)
	var all strings.Builder
	for _, p := range []string{"/api/runs/" + id, "/api/runs/" + id + "/events", "/api/run/" + id, "/api/config", "/metrics", "/api/runs"} {
		all.Write(v.must(http.StatusOK, "GET", p, nil, nil).body)
	}
	if req, ok := v.fake.LastRequest(); !ok || !strings.Contains(req.Header.Get("Authorization"), testAPIKey) {
		t.Fatal("the fake LLM did not get the key: the test proves nothing")
	}
	if strings.Contains(all.String(), testAPIKey) || strings.Contains(v.logs.String(), testAPIKey) {
		t.Fatal("the API key leaked into a response or the logs")
	}
	for _, f := range []string{v.dbPath, v.dbPath + "-wal"} {
		raw, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), testAPIKey) {
			t.Fatalf("the API key is in %s", f)
		}
	}
}

func TestSplitDefinition(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind, def, graph, source string
	}{
		{"graph", `{"nodes":[],"edges":[]}`, `{"nodes":[],"edges":[]}`, ""},
		{"yaml", `"name: x"`, "", "name: x"},
		{"yaml", `{"file":"/w/x.yaml","source":"name: y"}`, "", "name: y"},
		{"yaml", `[1]`, "", ""},
		{"graph", ``, "", ""},
	}
	for _, c := range cases {
		g, src := splitDefinition(c.kind, json.RawMessage(c.def))
		if string(g) != c.graph || src != c.source {
			t.Errorf("%s %s: graph %s source %q", c.kind, c.def, g, src)
		}
	}
}
