package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/yamledit"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

const commentedYAML = `# Greeter: says hello
name: Greeter
description: Says hello, then shouts it

nodes:
  - id: hello   # first
    bash: |
      # greet
      printf 'hello %s' "$ARGUMENTS"

  - id: shout
    depends_on: [hello]
    bash: printf '%s!' $hello.output
`

type yamlConflictJSON struct {
	Error    errorDetail `json:"error"`
	Yours    string      `json:"yours"`
	Disk     string      `json:"disk"`
	DiskHash string      `json:"diskHash"`
	Base     *string     `json:"base"`
}

func TestYAMLSaveSourceAndEdits(t *testing.T) {
	v, _, dir := newYAMLEnv(t, map[string]string{"greeter.yaml": commentedYAML}, func(o *envOpts) { o.noLLM = true })
	file := filepath.Join(dir, "greeter.yaml")
	const id = "yaml.greeter.yaml"

	var w yamlWorkflowJSON
	v.must(http.StatusOK, "GET", "/api/workflows/"+id, nil, &w)
	if w.SourceHash != sha(commentedYAML) || !w.Editable {
		t.Fatalf("GET: sourceHash %q editable %v", w.SourceHash, w.Editable)
	}

	// Structured edits change only their lines.
	edits := []yamledit.Edit{
		yamledit.Set("shout", "bash", "printf '%s!!' $hello.output"),
		{Op: yamledit.OpAddNode, Node: "done", Kind: "prompt", Value: []byte(`"Summarise $shout.output"`), DependsOn: []string{"shout"}},
	}
	var saved yamlWorkflowJSON
	v.must(http.StatusOK, "PUT", "/api/workflows/"+id, map[string]any{"edits": edits, "baseHash": w.SourceHash}, &saved)
	disk, _ := os.ReadFile(file)
	want := strings.Replace(commentedYAML, "printf '%s!' $hello", "printf '%s!!' $hello", 1) +
		"\n  - id: done\n    depends_on: [shout]\n    prompt: Summarise $shout.output\n"
	if string(disk) != want {
		t.Fatalf("file after edits:\n%s\nwant:\n%s", disk, want)
	}
	if saved.Source != want || saved.SourceHash != sha(want) || len(saved.Graph.Nodes) != 3 || len(saved.Graph.Edges) != 2 {
		t.Fatalf("answer: hash %s graph %+v", saved.SourceHash, saved.Graph)
	}
	if logs := v.logs.String(); !strings.Contains(logs, "yaml workflow saved") || !strings.Contains(logs, `diff="+5 -1 lines"`) {
		t.Fatalf("no write log with a diff summary:\n%s", logs)
	}

	// A stale base: 409 with yours, disk and base.
	r := v.request("PUT", "/api/workflows/"+id, map[string]any{"source": "name: x\n", "baseHash": w.SourceHash})
	var c yamlConflictJSON
	r.decode(t, &c)
	if r.status != http.StatusConflict || c.Error.Code != "conflict" || c.Disk != want || c.DiskHash != sha(want) ||
		c.Yours != "name: x\n" || c.Base == nil || *c.Base != commentedYAML {
		t.Fatalf("conflict: %d %s", r.status, r.body)
	}
	// Edits on a stale base: yours is the edits applied to the base.
	r = v.request("PUT", "/api/workflows/"+id, map[string]any{"edits": []yamledit.Edit{yamledit.Set("", "name", "G2")}, "baseHash": w.SourceHash})
	r.decode(t, &c)
	if r.status != http.StatusConflict || !strings.Contains(c.Yours, "name: G2\n") {
		t.Fatalf("edits conflict: %d %s", r.status, r.body)
	}
	// An unknown base: no base in the answer.
	r = v.request("PUT", "/api/workflows/"+id, map[string]any{"source": "x", "baseHash": strings.Repeat("0", 64)})
	c = yamlConflictJSON{}
	r.decode(t, &c)
	if r.status != http.StatusConflict || c.Base != nil {
		t.Fatalf("unknown base: %d %s", r.status, r.body)
	}

	// The whole text, saved as given (problems and all).
	text := strings.Replace(want, "depends_on: [shout]", "depends_on: [nope]", 1)
	v.must(http.StatusOK, "PUT", "/api/workflows/"+id, map[string]any{"source": text, "baseHash": saved.SourceHash}, &saved)
	disk, _ = os.ReadFile(file)
	if string(disk) != text || len(saved.Problems) == 0 || saved.Problems[0].Code != "unknown_dependency" || saved.Problems[0].Line != 16 {
		t.Fatalf("source save: %+v\n%s", saved.Problems, disk)
	}
	// No temporary files are left behind.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("folder holds %v", ents)
	}

	// A bad edit names the edit, node and field.
	r = v.request("PUT", "/api/workflows/"+id, map[string]any{"edits": []yamledit.Edit{yamledit.Set("ghost", "bash", "x")}, "baseHash": saved.SourceHash})
	if r.status != http.StatusBadRequest || r.errCode(t) != CodeInvalidEdit || !strings.Contains(string(r.body), `node \"ghost\"`) {
		t.Fatalf("bad edit: %d %s", r.status, r.body)
	}
	// restoreLines (yamledit.Inverse's exact undo) is not an HTTP edit,
	// even one that would apply: the file stays as it is.
	before, _ := os.ReadFile(file)
	restore := yamledit.Edit{Op: yamledit.OpRestoreLines, Line: 1, Old: strings.SplitAfter(string(before), "\n")[0], Text: "# restored\n"}
	r = v.request("PUT", "/api/workflows/"+id, map[string]any{"edits": []yamledit.Edit{yamledit.Set("", "description", "x"), restore}, "baseHash": saved.SourceHash})
	if r.status != http.StatusBadRequest || r.errCode(t) != CodeInvalidEdit || !strings.Contains(string(r.body), "edit 2 (restoreLines)") || !strings.Contains(string(r.body), "source") {
		t.Fatalf("restoreLines edit: %d %s", r.status, r.body)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatalf("a refused restoreLines changed the file:\n%s", after)
	}
	for _, body := range []map[string]any{
		{"source": "x"},
		{"baseHash": saved.SourceHash},
		{"source": "x", "edits": []any{}, "baseHash": saved.SourceHash},
	} {
		if r := v.request("PUT", "/api/workflows/"+id, body); r.status != http.StatusBadRequest {
			t.Fatalf("%v: %d %s", body, r.status, r.body)
		}
	}
	if r := v.request("PUT", "/api/workflows/yaml.missing.yaml", map[string]any{"source": "x", "baseHash": "y"}); r.status != http.StatusNotFound {
		t.Fatalf("missing file: %d %s", r.status, r.body)
	}
}

func TestYAMLSaveRefusesOutsideFolder(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.yaml")
	if err := os.WriteFile(secret, []byte(greeterYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	v, _, dir := newYAMLEnv(t, map[string]string{"in.yaml": greeterYAML}, func(o *envOpts) { o.noLLM = true })
	if err := os.Symlink(secret, filepath.Join(dir, "link.yaml")); err != nil {
		t.Skip(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	r := v.request("PUT", "/api/workflows/yaml.link.yaml", map[string]any{"source": "pwned", "baseHash": sha(greeterYAML)})
	if r.status != http.StatusNotFound {
		t.Fatalf("symlink out: %d %s", r.status, r.body)
	}
	if b, _ := os.ReadFile(secret); string(b) != greeterYAML {
		t.Fatal("file outside the folder changed")
	}
	for _, p := range []string{"../x.yaml", "/tmp/x.yaml", "sub/x.yaml", ".hidden.yaml", "x.txt", "a//b.yaml", ""} {
		r := v.request("POST", "/api/workflows/yaml", map[string]any{"path": p, "source": greeterYAML})
		if r.status != http.StatusBadRequest {
			t.Fatalf("create %q: %d %s", p, r.status, r.body)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "x.yaml")); err == nil {
		t.Fatal("created a file through a symlinked folder")
	}
}

func TestYAMLCreate(t *testing.T) {
	v, _, dir := newYAMLEnv(t, map[string]string{"in.yaml": greeterYAML}, func(o *envOpts) { o.noLLM = true })
	var w yamlWorkflowJSON
	v.must(http.StatusCreated, "POST", "/api/workflows/yaml", map[string]any{"path": "team/new flow.yaml", "source": greeterYAML}, &w)
	if w.ID != "yaml.team__new_20flow.yaml" || w.SourceHash != sha(greeterYAML) || len(w.Graph.Nodes) != 2 || !w.Editable {
		t.Fatalf("created %+v", w)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "team", "new flow.yaml")); err != nil || string(b) != greeterYAML {
		t.Fatalf("file: %v %q", err, b)
	}
	r := v.request("POST", "/api/workflows/yaml", map[string]any{"path": "in.yaml", "source": "x"})
	if r.status != http.StatusConflict || r.errCode(t) != CodeConflict {
		t.Fatalf("existing: %d %s", r.status, r.body)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "in.yaml")); string(b) != greeterYAML {
		t.Fatal("create overwrote a file")
	}
	if !strings.Contains(v.logs.String(), "yaml workflow created") {
		t.Fatal("no create log")
	}
}

func TestYAMLReadOnlyWorkflows(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"in.yaml": greeterYAML})
	src, err := NewYAMLWorkflows(dir, YAMLOptions{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	v := newEnv(t, func(o *envOpts) { o.source = src; o.noLLM = true; o.readOnlyWorkflows = true })
	var w yamlWorkflowJSON
	v.must(http.StatusOK, "GET", "/api/workflows/yaml.in.yaml", nil, &w)
	if w.Editable {
		t.Fatal("editable under --read-only-workflows")
	}
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"PUT", "/api/workflows/yaml.in.yaml", map[string]any{"source": "x", "baseHash": w.SourceHash}},
		{"POST", "/api/workflows/yaml", map[string]any{"path": "n.yaml", "source": "x"}},
		{"PUT", "/api/workflows/yaml.in.yaml/positions", map[string]any{"positions": map[string]any{}}},
	} {
		r := v.request(req.method, req.path, req.body)
		if r.status != http.StatusForbidden || r.errCode(t) != CodeForbidden || !strings.Contains(string(r.body), "read-only-workflows") {
			t.Fatalf("%s %s: %d %s", req.method, req.path, r.status, r.body)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "in.yaml")); string(b) != greeterYAML {
		t.Fatal("file changed")
	}
	// Validation and conversion write nothing: still allowed.
	v.must(http.StatusOK, "POST", "/api/yaml/validate", map[string]any{"source": greeterYAML}, nil)
}

func TestYAMLEditNeedsToken(t *testing.T) {
	v, _, dir := newYAMLEnv(t, map[string]string{"in.yaml": greeterYAML}, func(o *envOpts) { o.noLLM = true; o.token = testToken })
	v.token = ""
	r := v.request("PUT", "/api/workflows/yaml.in.yaml", map[string]any{"source": "x", "baseHash": sha(greeterYAML)})
	if r.status != http.StatusUnauthorized {
		t.Fatalf("no token: %d %s", r.status, r.body)
	}
	v.token = testToken
	v.must(http.StatusOK, "PUT", "/api/workflows/yaml.in.yaml", map[string]any{"source": "name: x\n", "baseHash": sha(greeterYAML)}, nil)
	if b, _ := os.ReadFile(filepath.Join(dir, "in.yaml")); string(b) != "name: x\n" {
		t.Fatalf("file %q", b)
	}
}

func TestYAMLValidateRoute(t *testing.T) {
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	var res struct {
		Valid    bool `json:"valid"`
		Problems []struct {
			Code   string `json:"code"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"problems"`
		Graph *yamlProjection `json:"graph"`
	}
	v.must(http.StatusOK, "POST", "/api/yaml/validate", map[string]any{"source": brokenYAML}, &res)
	if res.Valid || len(res.Problems) != 2 || len(res.Graph.Nodes) != 2 {
		t.Fatalf("%+v", res)
	}
	for _, p := range res.Problems {
		switch p.Code {
		case "unknown_dependency":
			if p.Line != 8 || p.Column != 5 {
				t.Fatalf("%+v", p)
			}
		case "ai_field_ignored":
			if p.Line != 6 || p.Column != 5 {
				t.Fatalf("%+v", p)
			}
		default:
			t.Fatalf("%+v", p)
		}
	}
	v.must(http.StatusOK, "POST", "/api/yaml/validate", map[string]any{"source": "a: [\n"}, &res)
	if res.Valid || len(res.Problems) != 1 || res.Problems[0].Code != "yaml_syntax" || res.Problems[0].Line == 0 {
		t.Fatalf("%+v", res)
	}
	v.must(http.StatusOK, "POST", "/api/yaml/validate", map[string]any{"source": greeterYAML}, &res)
	if !res.Valid || len(res.Problems) != 0 {
		t.Fatalf("%+v", res)
	}
}

func TestYAMLPositionsRoute(t *testing.T) {
	v, _, dir := newYAMLEnv(t, map[string]string{"in.yaml": greeterYAML}, func(o *envOpts) { o.noLLM = true })
	var p yamlPositionsBody
	v.must(http.StatusOK, "GET", "/api/workflows/yaml.in.yaml/positions", nil, &p)
	if len(p.Positions) != 0 {
		t.Fatalf("%+v", p)
	}
	body := map[string]any{"positions": map[string]graph.Position{"hello": {X: 10, Y: 20}, "shout": {X: 300.5, Y: -20}}}
	v.must(http.StatusOK, "PUT", "/api/workflows/yaml.in.yaml/positions", body, &p)
	v.must(http.StatusOK, "GET", "/api/workflows/yaml.in.yaml/positions", nil, &p)
	if p.Positions["shout"] != (graph.Position{X: 300.5, Y: -20}) || len(p.Positions) != 2 {
		t.Fatalf("%+v", p)
	}
	// Kept in the database, not in the user's file.
	db, err := v.st.YAMLPositions(context.Background(), "yaml.in.yaml")
	if err != nil || len(db) != 2 || db["hello"].X != 10 {
		t.Fatalf("database: %v %+v", err, db)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "in.yaml")); string(b) != greeterYAML {
		t.Fatal("positions went into the user's file")
	}
	p = yamlPositionsBody{}
	v.must(http.StatusOK, "PUT", "/api/workflows/yaml.in.yaml/positions", map[string]any{"positions": map[string]any{"hello": map[string]any{"x": 1, "y": 2}}}, &p)
	if len(p.Positions) != 1 {
		t.Fatalf("replace: %+v", p)
	}
	if r := v.request("GET", "/api/workflows/yaml.none.yaml/positions", nil); r.status != http.StatusNotFound {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := v.request("GET", "/api/workflows/0b8a2a54-0000-4000-8000-000000000000/positions", nil); r.status != http.StatusBadRequest {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := v.request("PUT", "/api/workflows/yaml.in.yaml/positions", map[string]any{"positions": map[string]any{"": map[string]any{"x": 1, "y": 2}}}); r.status != http.StatusBadRequest {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestYAMLPositionsFile: without a database that keeps positions, they go
// to a JSON file in the data folder and are read back by the next server.
func TestYAMLPositionsFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "data", "yaml-positions.json")
	p := newYAMLPositions(path)
	if err := p.set(ctx, "yaml.a.yaml", map[string]graph.Position{"n": {X: 1, Y: 2}}); err != nil {
		t.Fatal(err)
	}
	got, err := newYAMLPositions(path).get(ctx, "yaml.a.yaml")
	if err != nil || got["n"] != (graph.Position{X: 1, Y: 2}) {
		t.Fatalf("%v %+v", err, got)
	}
	if err := p.set(ctx, "yaml.a.yaml", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := newYAMLPositions(path).get(ctx, "yaml.a.yaml"); len(got) != 0 {
		t.Fatalf("%+v", got)
	}
	// An unreadable file is not overwritten.
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := newYAMLPositions(path).set(ctx, "yaml.a.yaml", map[string]graph.Position{"n": {}}); err == nil {
		t.Fatal("overwrote an unreadable positions file")
	}
}

func TestConvertDrawnWorkflowToYAML(t *testing.T) {
	v, _, _ := newYAMLEnv(t, map[string]string{"in.yaml": greeterYAML}, func(o *envOpts) { o.noLLM = true })
	g := map[string]any{
		"nodes": []map[string]any{
			{"id": "start", "type": "start", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{}},
			{"id": "a1", "type": "agent", "position": map[string]any{"x": 1, "y": 0}, "data": map[string]any{"agentName": "Writer", "userPrompt": "Write about $ARGUMENTS", "model": "gpt-5"}},
			{"id": "ok", "type": "approval", "position": map[string]any{"x": 2, "y": 0}, "data": map[string]any{"prompt": "Publish?"}},
		},
		"edges": []map[string]any{
			{"id": "e1", "source": "start", "target": "a1", "sourceHandle": "output", "targetHandle": "input"},
			{"id": "e2", "source": "a1", "target": "ok", "sourceHandle": "output", "targetHandle": "input"},
		},
	}
	var created struct {
		ID string `json:"id"`
	}
	v.must(http.StatusCreated, "POST", "/api/workflows", map[string]any{"name": "My Flow", "graph": g}, &created)
	var conv struct {
		Source      string                 `json:"source"`
		Path        string                 `json:"path"`
		Unconverted []yamledit.Unconverted `json:"unconverted"`
		Problems    []graph.Problem        `json:"problems"`
	}
	v.must(http.StatusOK, "POST", "/api/workflows/"+created.ID+"/yaml", nil, &conv)
	want := "name: My Flow\ndescription: Converted from the drawn workflow My Flow.\nnodes:\n  - id: Writer\n    prompt: Write about $ARGUMENTS\n    model: gpt-5\n  - id: ok\n    depends_on: [Writer]\n    approval:\n      message: Publish?\n"
	if conv.Source != want || conv.Path != "my-flow.yaml" || len(conv.Unconverted) != 0 || len(conv.Problems) != 0 {
		t.Fatalf("%+v\n%s", conv, conv.Source)
	}
	// Saved through the create route, it loads.
	var w yamlWorkflowJSON
	v.must(http.StatusCreated, "POST", "/api/workflows/yaml", map[string]any{"path": conv.Path, "source": conv.Source}, &w)
	if len(w.Problems) != 0 || len(w.Graph.Nodes) != 2 {
		t.Fatalf("%+v", w)
	}
	if r := v.request("POST", "/api/workflows/yaml.in.yaml/yaml", nil); r.status != http.StatusBadRequest {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := v.request("POST", "/api/workflows/0b8a2a54-0000-4000-8000-000000000000/yaml", nil); r.status != http.StatusNotFound {
		t.Fatalf("%d %s", r.status, r.body)
	}
}
