package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
)

// httpMCPServer is an MCP server built with the Go SDK, served over
// streamable HTTP on loopback, with one tool "shout" that counts calls.
func httpMCPServer(t *testing.T) (url string, calls *int) {
	t.Helper()
	n := new(int)
	srv := sdk.NewServer(&sdk.Implementation{Name: "shouter", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "shout", Description: "Upper-cases text."},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			*n++
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(a.Text)}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL, n
}

// TestYAMLAgentMCPOverHTTP: a YAML node's inline mcp: server (streamable
// HTTP, built with the Go SDK) offers mcp__shouter__shout; allowed_tools
// patterns select it; the call's result reaches the model.
func TestYAMLAgentMCPOverHTTP(t *testing.T) {
	url, calls := httpMCPServer(t)
	sc, err := fakeopenai.ParseScript("mcp.yaml", []byte(`
rules:
  - match: "(?i)shout"
    turns:
      - tool_calls:
          - name: mcp__shouter__shout
            arguments: {text: "hello"}
      - text: "got {{last_result}}"
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := fakeopenai.StartT(t, fakeopenai.WithScript(sc))
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "test"})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newTestEngine(t, Config{LLM: client})
	src := wf("  - id: a\n    prompt: shout it\n    allowed_tools: [Read, \"mcp__shouter__*\"]\n" +
		"    mcp:\n      shouter:\n        type: http\n        url: " + url + "\n")
	got, ns := runYAMLT(t, e, src, "")
	if got.Status != StatusCompleted {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	if ns["a"].Output != "got HELLO" || *calls != 1 {
		t.Errorf("output %q, %d calls", ns["a"].Output, *calls)
	}
	var names []string
	for _, tl := range srv.Requests()[0].Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "Read,mcp__shouter__shout" {
		t.Errorf("offered %v", names)
	}
}

// TestYAMLAgentMCPServerFailsToStart: a server that cannot start is the
// node's error, naming the server.
func TestYAMLAgentMCPServerFailsToStart(t *testing.T) {
	e, _, _ := yamlLLMEngine(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"),
		[]byte(`{"mcpServers": {"ghost": {"command": "no-such-mcp-server-binary"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := startYAMLIn(t, e, dir, wf("  - id: a\n    prompt: hi\n    mcp: mcp.json\n"), "")
	got := waitRun(t, e, run.ID)
	ns := nodeStates(t, e, run.ID)
	if got.Status != StatusFailed || !strings.Contains(ns["a"].Error, "ghost") {
		t.Fatalf("%s; node error %q: want a failure naming the server", got.Status, ns["a"].Error)
	}
}

// TestYAMLWriteApproval: approve_tools: [Write] pauses before the write
// with the diff; approved, the file is written once; a rejected Write
// reaches the model as the reviewer's note and writes nothing.
func TestYAMLWriteApproval(t *testing.T) {
	sc, err := fakeopenai.ParseScript("w.yaml", []byte(`
rules:
  - match: "(?i)write"
    turns:
      - tool_calls:
          - name: Write
            arguments: {file_path: notes.txt, content: "new line\n"}
      - text: "result: {{last_result}}"
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := fakeopenai.StartT(t, fakeopenai.WithScript(sc))
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "test"})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newTestEngine(t, Config{LLM: client})
	for _, decision := range []string{"approve", "reject"} {
		t.Run(decision, func(t *testing.T) {
			dir := t.TempDir()
			_ = os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("old line\n"), 0o644)
			run := startYAMLIn(t, e, dir, wf("  - id: a\n    prompt: write the notes\n    approve_tools: [Write]\n"), "")
			got := waitRun(t, e, run.ID)
			if got.Status != StatusPaused || len(got.PendingApprovals) != 1 || got.PendingApprovals[0].Tool == nil {
				t.Fatalf("%s %+v", got.Status, got.PendingApprovals)
			}
			ta := got.PendingApprovals[0].Tool
			if ta.Tool != "Write" || !strings.Contains(ta.Diff, "-old line\n+new line") {
				t.Errorf("waiting call %+v", ta)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "old line\n" {
				t.Fatalf("written before the approval: %q", b)
			}
			if _, err := e.Resume(context.Background(), run.ID, "a", Decision{Decision: decision, Note: "keep the old one"}); err != nil {
				t.Fatal(err)
			}
			got = waitRun(t, e, run.ID)
			if got.Status != StatusCompleted {
				t.Fatalf("%s %s", got.Status, got.Error)
			}
			b, _ := os.ReadFile(filepath.Join(dir, "notes.txt"))
			out := nodeStates(t, e, run.ID)["a"].Output
			if decision == "approve" {
				if string(b) != "new line\n" || !strings.HasPrefix(out, "result: ") {
					t.Errorf("file %q, output %q", b, out)
				}
			} else if string(b) != "old line\n" || out != "result: denied by the reviewer: keep the old one" {
				t.Errorf("file %q, output %q", b, out)
			}
		})
	}
}
