package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// TestApprovalPatternsCatchTheCallsTheyName: a call that an approval
// pattern names waits for a reviewer however the model spells it, in a
// drawn agent (data.tools.approve) exactly as in a YAML node
// (approve_tools). Models write "cd repo && git push" and absolute paths
// (Claude Code's file tools ask for them); a pattern that let those
// through would run a gated call with nobody asked.
func TestApprovalPatternsCatchTheCallsTheyName(t *testing.T) {
	e, _ := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	var call fakeopenai.ToolCall
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		for _, m := range req.Messages {
			if m.Role == "tool" {
				return fakeopenai.Reply{Text: "done"}
			}
		}
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{call}}
	})
	type tc struct {
		name, pattern, tool string
		args                func(dir string) map[string]any
		wait                bool
	}
	cmd := func(c string) func(string) map[string]any {
		return func(string) map[string]any { return map[string]any{"command": c} }
	}
	write := func(p func(dir string) string) func(string) map[string]any {
		return func(dir string) map[string]any { return map[string]any{"file_path": p(dir), "content": "x\n"} }
	}
	cases := []tc{
		{"plain", "Bash(git push:*)", "Bash", cmd("git push origin main"), true},
		{"after cd", "Bash(git push:*)", "Bash", cmd("cd . && git push origin main"), true},
		{"in a pipe", "Bash(git push:*)", "Bash", cmd("true | git push"), true},
		{"env assignment", "Bash(git push:*)", "Bash", cmd("GIT_TRACE=1 git push"), true},
		{"env command", "Bash(git push:*)", "Bash", cmd("env GIT_TRACE=1 git push"), true},
		{"wrapper", "Bash(git push:*)", "Bash", cmd("command git push"), true},
		{"quoted name", "Bash(git push:*)", "Bash", cmd(`"git" push`), true},
		{"bash -c", "Bash(git push:*)", "Bash", cmd(`bash -c "cd . && git push"`), true},
		{"other command", "Bash(git push:*)", "Bash", cmd("git status && echo push"), false},
		{"relative path", "Write(docs/*)", "Write", write(func(string) string { return "docs/a.md" }), true},
		{"dot path", "Write(docs/*)", "Write", write(func(string) string { return "./docs/a.md" }), true},
		{"absolute path", "Write(docs/*)", "Write", write(func(dir string) string { return filepath.Join(dir, "docs", "a.md") }), true},
		{"elsewhere", "Write(docs/*)", "Write", write(func(dir string) string { return filepath.Join(dir, "src", "a.md") }), false},
	}
	for _, c := range cases {
		for _, drawn := range []bool{true, false} {
			kind := "yaml"
			if drawn {
				kind = "drawn"
			}
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				b, _ := json.Marshal(c.args(dir))
				call = fakeopenai.ToolCall{Name: c.tool, Arguments: string(b)}
				var run *Run
				if drawn {
					g := (&gb{}).node("s", "start", graph.NodeData{InitialInput: "go"}).
						node("a", "agent", graph.NodeData{AgentName: "A",
							Tools: &graph.Tools{Builtin: []string{c.tool}, Approve: []string{c.pattern}}}).
						edge("s", "output", "a").build()
					var err error
					if run, err = e.StartGraph(context.Background(), g, StartOptions{WorkDir: dir}); err != nil {
						t.Fatal(err)
					}
				} else {
					pat, _ := json.Marshal(c.pattern)
					run = startYAMLIn(t, e, dir, wf("  - id: a\n    prompt: go\n    allowed_tools: ["+c.tool+"]\n    approve_tools: ["+string(pat)+"]\n"), "")
				}
				got := waitRun(t, e, run.ID)
				waited := got.Status == StatusPaused && len(got.PendingApprovals) == 1 && got.PendingApprovals[0].Tool != nil
				if waited != c.wait {
					t.Fatalf("%s %s with %s: status %s, waiting %+v; want waiting %v", c.tool, b, c.pattern, got.Status, got.PendingApprovals, c.wait)
				}
				if !c.wait && got.Status != StatusCompleted {
					t.Fatalf("%s %s", got.Status, got.Error)
				}
				if c.wait && c.tool == "Write" {
					if _, err := os.Stat(filepath.Join(dir, "docs")); err == nil {
						t.Errorf("the Write ran before its approval")
					}
				}
			})
		}
	}
}
