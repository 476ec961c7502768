package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// startServeIn is startServe with the process working in dir.
func startServeIn(t *testing.T, dir string, env []string, args ...string) *serverProc {
	t.Helper()
	return startServeDir(t, dir, env, append([]string{"--addr", "127.0.0.1:0"}, args...)...)
}

func writeWorkflowFiles(t *testing.T, dir string, files map[string]string) {
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

const whereYAML = `name: Where
description: says where it runs
nodes:
  - id: where
    bash: printf '%s in %s' "$ARGUMENTS" "$(basename "$PWD")"
  - id: after
    depends_on: [where]
    bash: printf 'after %s' $where.output
`

const brokenWorkflowYAML = `name: Broken
description: depends on nothing there
nodes:
  - id: b
    depends_on: [missing]
    bash: echo b
`

type apiWorkflow struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly"`
	Source   string `json:"source"`
	Graph    *struct {
		Nodes []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Label, Kind, Detail string
			} `json:"data"`
		} `json:"nodes"`
		Edges []struct{ Source, Target string } `json:"edges"`
	} `json:"graph"`
	Problems []struct{ Code, Severity, Message string } `json:"problems"`
}

func TestServeYAMLWorkflowsEndToEnd(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	folder := t.TempDir()
	writeWorkflowFiles(t, folder, map[string]string{"where.yaml": whereYAML, "team/broken.yml": brokenWorkflowYAML})
	p := startServeIn(t, cwd, nil, "--data", t.TempDir(), "--workflows", folder)

	// Listed beside a drawn workflow.
	status, body := p.post(t, "/api/workflows", map[string]any{"name": "Drawn", "graph": map[string]any{
		"nodes": []map[string]any{{"id": "s", "type": "start", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{}}},
		"edges": []any{}}})
	if status != http.StatusCreated {
		t.Fatalf("create drawn: %d %s", status, body)
	}
	var list []apiWorkflow
	getJSON(t, p, "/api/workflows", &list)
	byID := map[string]apiWorkflow{}
	for _, w := range list {
		byID[w.ID] = w
	}
	where, broken := byID["yaml.where.yaml"], byID["yaml.team__broken.yml"]
	if len(list) != 3 || where.Kind != "yaml" || !where.ReadOnly || where.Name != "Where" || len(where.Problems) != 0 ||
		len(broken.Problems) != 1 || broken.Problems[0].Code != "unknown_dependency" || !strings.Contains(broken.Problems[0].Message, "broken.yml:5:") {
		t.Fatalf("list %+v", list)
	}

	var w apiWorkflow
	getJSON(t, p, "/api/workflows/yaml.where.yaml", &w)
	if w.Source != whereYAML || w.Graph == nil || len(w.Graph.Nodes) != 2 || len(w.Graph.Edges) != 1 ||
		w.Graph.Nodes[0].Type != "yaml" || w.Graph.Nodes[0].Data.Kind != "bash" || w.Path != "where.yaml" { // relative to the folder
		t.Fatalf("workflow %+v", w)
	}

	// Run it; watch its events until the server closes the stream.
	status, body = p.post(t, "/api/runs", map[string]any{"workflowId": "yaml.where.yaml", "input": "hi"})
	if status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, body)
	}
	var run struct {
		RunID      string            `json:"runId"`
		WorkflowID string            `json:"workflowId"`
		Status     string            `json:"status"`
		Outputs    map[string]string `json:"outputs"`
		Graph      json.RawMessage   `json:"graph"`
	}
	if err := json.Unmarshal(body, &run); err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(p.url, "http")+"/api/runs/"+run.RunID+"/ws",
		http.Header{"Authorization": {"Bearer " + p.token}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var types []string
	for {
		_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, raw, err := ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure {
				t.Fatalf("stream ended with %v after %v", err, types)
			}
			break
		}
		var ev struct{ Type, NodeID, Content string }
		_ = json.Unmarshal(raw, &ev)
		types = append(types, ev.NodeID+":"+ev.Type)
	}
	if last := types[len(types)-1]; last != "system:run_status" || !contains(types, "after:step_end") {
		t.Fatalf("events %v", types)
	}
	getJSON(t, p, "/api/runs/"+run.RunID, &run)
	want := "hi in " + filepath.Base(cwd) // runs work in the server's directory
	if run.Status != "completed" || run.Outputs["where"] != want || run.Outputs["after"] != "after "+want ||
		run.WorkflowID != "yaml.where.yaml" || !bytes.Contains(run.Graph, []byte(`"type":"yaml"`)) {
		t.Fatalf("run %+v graph %s", run, run.Graph)
	}
	var runs []struct{ RunID, WorkflowID string }
	getJSON(t, p, "/api/runs?workflowId=yaml.where.yaml", &runs)
	if len(runs) != 1 || runs[0].RunID != run.RunID {
		t.Fatalf("run history %+v", runs)
	}

	// A file with errors is refused, with its problems.
	status, body = p.post(t, "/api/runs", map[string]any{"workflowId": "yaml.team__broken.yml"})
	if status != http.StatusBadRequest || !strings.Contains(string(body), "unknown_dependency") || !strings.Contains(string(body), "broken.yml:5:") {
		t.Fatalf("broken start: %d %s", status, body)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.log())
	}
}

func TestServeDefaultWorkflowsFolder(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	writeWorkflowFiles(t, cwd, map[string]string{".switchyard/workflows/where.yaml": whereYAML})
	p := startServeIn(t, cwd, nil, "--data", t.TempDir())
	var list []apiWorkflow
	getJSON(t, p, "/api/workflows", &list)
	if len(list) != 1 || list[0].ID != "yaml.where.yaml" || list[0].Path != filepath.Join(".switchyard", "workflows", "where.yaml") {
		t.Fatalf("default folder: %+v", list)
	}
	p.stop(t)

	// --workflows "" lists none; a missing folder lists none until it exists.
	p = startServeIn(t, cwd, nil, "--data", t.TempDir(), "--workflows", "")
	getJSON(t, p, "/api/workflows", &list)
	if len(list) != 0 {
		t.Fatalf("--workflows \"\": %+v", list)
	}
	p.stop(t)
	p = startServeIn(t, cwd, nil, "--data", t.TempDir(), "--workflows", "later")
	getJSON(t, p, "/api/workflows", &list)
	if len(list) != 0 {
		t.Fatalf("missing folder: %+v", list)
	}
	writeWorkflowFiles(t, filepath.Join(cwd, "later"), map[string]string{"w.yml": whereYAML})
	getJSON(t, p, "/api/workflows", &list)
	if len(list) != 1 || list[0].ID != "yaml.w.yml" {
		t.Fatalf("after creating the folder: %+v", list)
	}
	p.stop(t)
}

func TestServeWorkflowsNotAFolder(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "where.yaml")
	writeWorkflowFiles(t, filepath.Dir(file), map[string]string{"where.yaml": whereYAML})
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workflows", file)
	cmd.Env = append(os.Environ(), "SWITCHYARD_TOKEN=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailed || !strings.Contains(stderr.String(), "not a folder") {
		t.Fatalf("serve --workflows FILE: %v\n%s", err, stderr.String())
	}
}

func getJSON(t *testing.T, p *serverProc, path string, out any) {
	t.Helper()
	status, _, body := p.get(t, path, "")
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestServeArchonE2EDeterministic lists the Archon fixture folder and runs
// e2e-deterministic.yaml (bash, bun and uv scripts, when, trigger rules)
// through a real `switchyard serve` to completion.
func TestServeArchonE2EDeterministic(t *testing.T) {
	t.Parallel()
	fx, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "fixtures", "archon"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fx); err != nil {
		t.Skipf("shared fixtures not found at %s (../shared is absent)", fx)
	}
	if _, err := exec.LookPath("bun"); err != nil {
		t.Skip("bun is not on PATH: install it with `npm install -g bun`")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH (the uv stand-in needs it)")
	}
	uv, err := filepath.Abs(filepath.Join("..", "..", "engine", "testdata", "yaml", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	p := startServeIn(t, t.TempDir(), []string{
		"PATH=" + uv + string(os.PathListSeparator) + os.Getenv("PATH"),
		"SWITCHYARD_SCRIPTS_DIR=" + filepath.Join(fx, "scripts"),
	}, "--data", t.TempDir(), "--workflows", filepath.Join(fx, "workflows"))
	const id = "yaml.test-workflows__e2e-deterministic.yaml"
	var list []apiWorkflow
	getJSON(t, p, "/api/workflows", &list)
	listed := false
	for _, w := range list {
		listed = listed || w.ID == id && w.Name == "e2e-deterministic" && len(w.Problems) == 0
	}
	if !listed {
		t.Fatalf("%s not listed among %d workflows", id, len(list))
	}
	run := runToEnd(t, p, id, 2*time.Minute)
	if run.Status != "completed" || !strings.HasSuffix(run.Outputs["verify-all"], "PASS: all deterministic nodes produced output") {
		t.Fatalf("run %s (%s): %v\n%s", run.Status, run.Error, run.Outputs, p.log())
	}
	p.stop(t)
}
