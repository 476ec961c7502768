package yamlflow

import (
	"reflect"
	"slices"
	"testing"
)

// TestAgentFieldsParsed checks the values the agent fields load into (the
// diagnostics of the same file are checked by TestLoaderErrors).
func TestAgentFieldsParsed(t *testing.T) {
	t.Parallel()
	wf, _, err := Load("testdata/errors/agent.yaml")
	if err == nil {
		t.Fatal("agent.yaml has errors; Load returned none")
	}
	if wf.Worktree == nil || wf.Worktree.Enabled == nil || *wf.Worktree.Enabled {
		t.Errorf("Worktree = %+v, want enabled false", wf.Worktree)
	}
	tools := wf.Node("tools")
	if want := []string{"Read", "Reed", "mcp__github__*", "mcp__x__create_issue", "*"}; !slices.Equal(tools.AllowedTools, want) {
		t.Errorf("AllowedTools = %q, want %q", tools.AllowedTools, want)
	}
	if want := []string{"Bash", "bash"}; !slices.Equal(tools.DeniedTools, want) {
		t.Errorf("DeniedTools = %q, want %q (invalid entries dropped)", tools.DeniedTools, want)
	}
	if tools.MaxTurns != 10 {
		t.Errorf("MaxTurns = %d", tools.MaxTurns)
	}
	if none := wf.Node("none"); none.AllowedTools == nil || len(none.AllowedTools) != 0 {
		t.Errorf("allowed_tools: [] = %#v, want an empty non-nil slice", none.AllowedTools)
	}
	if ap := wf.Node("approve"); ap.AllowedTools != nil || ap.MaxTurns != 0 {
		t.Errorf("absent allowed_tools/max_turns = %#v/%d, want nil/0", ap.AllowedTools, ap.MaxTurns)
	}
	var raws []string
	for _, p := range wf.Node("approve").ApproveTools {
		raws = append(raws, p.Raw)
	}
	if want := []string{"Write", "Bash(git push:*)", "Edit(src/:*)", "mcp__github__create_*", "Wirte"}; !slices.Equal(raws, want) {
		t.Errorf("ApproveTools = %q, want %q", raws, want)
	}
	if b := wf.Node("on-bash"); b.AllowedTools != nil || b.MaxTurns != 0 || b.ApproveTools != nil || b.MCP != nil {
		t.Errorf("agent fields applied to a bash node: %+v", b)
	}
	if m := wf.Node("mcp-file").MCP; m == nil || m.File != ".archon/mcp/ntfy.json" || m.Servers != nil {
		t.Errorf("mcp file = %+v", m)
	}
	m := wf.Node("mcp-inline").MCP
	wantServers := map[string]MCPServer{
		"github": {Type: MCPTypeStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"},
			Env: map[string]string{"GITHUB_TOKEN": "x", "RETRIES": "3"}},
		"docs": {Type: MCPTypeHTTP, URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
	}
	if m == nil || !reflect.DeepEqual(m.Servers, wantServers) {
		t.Fatalf("inline mcp = %+v", m)
	}
	if gh, _ := m.Raw["github"].(map[string]any); gh["command"] != "npx" {
		t.Errorf("mcp Raw = %#v", m.Raw)
	}
	if w := wf.Node("mcp-wrapped").MCP; w == nil || w.Servers["x"].Command != "run-x" {
		t.Errorf("mcpServers-wrapped mcp = %+v", w)
	}
}

func TestWorktreeAbsentAndEnabled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src  string
		want *bool
		nil_ bool
	}{
		{src: "", nil_: true},
		{src: "worktree: {enabled: true}\n", want: new(true)},
		{src: "worktree: {}\n", want: nil},
	} {
		wf, _, err := Parse("wf.yaml", []byte("name: x\ndescription: y\n"+tc.src+"nodes:\n  - id: a\n    bash: echo\n"))
		if err != nil {
			t.Fatal(err)
		}
		if tc.nil_ {
			if wf.Worktree != nil {
				t.Errorf("%q: Worktree = %+v, want nil", tc.src, wf.Worktree)
			}
			continue
		}
		if wf.Worktree == nil || !reflect.DeepEqual(wf.Worktree.Enabled, tc.want) {
			t.Errorf("%q: Worktree = %+v, want Enabled %v", tc.src, wf.Worktree, tc.want)
		}
	}
}

func TestToolEnabled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		allowed, denied []string
		tool            string
		want            bool
	}{
		{nil, nil, "Bash", true},
		{[]string{}, nil, "Read", false},
		{[]string{"Read", "Grep"}, nil, "Read", true},
		{[]string{"Read", "Grep"}, nil, "Write", false},
		{nil, []string{"Bash"}, "Bash", false},
		{nil, []string{"mcp__github__*"}, "mcp__github__create_issue", false},
		{[]string{"*"}, []string{"Write", "Edit"}, "Edit", false},
		{[]string{"*"}, []string{"Write", "Edit"}, "Read", true},
	}
	for _, tc := range tests {
		n := &Node{AllowedTools: tc.allowed, DeniedTools: tc.denied}
		if got := n.ToolEnabled(tc.tool); got != tc.want {
			t.Errorf("allowed %q denied %q: ToolEnabled(%s) = %v, want %v", tc.allowed, tc.denied, tc.tool, got, tc.want)
		}
	}
}
