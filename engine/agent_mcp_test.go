package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/mcp"
)

// everythingConfig is an MCP config with the reference test server from
// npm (@modelcontextprotocol/server-everything, a root devDependency).
func everythingConfig(t *testing.T) mcp.Config {
	t.Helper()
	root, _ := filepath.Abs("..")
	bin := filepath.Join(root, "node_modules", ".bin", "mcp-server-everything")
	_, errBin := os.Stat(bin)
	_, errNode := exec.LookPath("node")
	if errBin != nil || errNode != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the npm MCP server is missing (%v, %v): run npm ci at the repository root", errBin, errNode)
		}
		t.Skip("the npm MCP server is missing: run npm ci at the repository root")
	}
	js, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{bin, "stdio"}}}})
	cfg, err := mcp.ParseConfig(js, "test.mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestDrawnAgentCallsMCPTool: an agent that picks the server by name sees
// its tools as mcp__everything__<tool>, calls one, and gets the result
// back; the server's process group is recorded and gone once the run
// ends.
func TestDrawnAgentCallsMCPTool(t *testing.T) {
	cfg := everythingConfig(t)
	handler := func(req *fakeopenai.Request) fakeopenai.Reply {
		if !req.HasTool("mcp__everything__echo") {
			return fakeopenai.Reply{Text: "no mcp tools offered"}
		}
		if rs := req.ToolResults(); len(rs) > 0 {
			return fakeopenai.Reply{Text: "server said: " + rs[0].Content}
		}
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "mcp__everything__echo", Arguments: `{"message":"over MCP"}`}}}
	}
	fake := fakeopenai.StartT(t, fakeopenai.WithHandler(handler))
	client, err := llm.New(llm.Config{BaseURL: fake.URL(), APIKey: "test"})
	if err != nil {
		t.Fatal(err)
	}
	st := engine.NewMemStore()
	e, err := engine.New(engine.Config{Store: st, LLM: client, MCP: cfg, ArtifactsRoot: t.TempDir(),
		WorkspaceRoot: t.TempDir(), Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	b := &gbuild{}
	b.node("s", graph.TypeStart, graph.NodeData{InitialInput: "go"}).
		node("a", graph.TypeAgent, graph.NodeData{AgentName: "A", Tools: &graph.Tools{MCP: []string{"everything"}}}).
		edge("s", "output", "a")
	run, err := e.StartGraph(context.Background(), &b.g, engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := waitDone(t, e, run.ID)
	if r.Status != engine.StatusCompleted {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	s := loadStored(t, st, run.ID)
	if got := s.nodes["a"].Output; got != "server said: Echo: over MCP" {
		t.Errorf("output %q", got)
	}
	var pgid int
	for _, ev := range s.events {
		if ev.Type == engine.EvProcessStart && strings.Contains(ev.Content, "mcp server everything") {
			var d struct {
				ID int `json:"pgid"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			pgid = d.ID
		}
	}
	if pgid == 0 {
		t.Fatal("no process_start event for the MCP server")
	}
	eventually(t, "the MCP server stopped with the run", func() bool {
		return syscall.Kill(-pgid, 0) != nil
	})
}
