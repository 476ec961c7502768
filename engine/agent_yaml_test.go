package engine

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
)

// gitRepo makes a real git repository with one commit of files.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "init")
	return dir
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

const fixScript = `
rules:
  - match: "(?i)fix the failing test"
    final: "gave up: {{last_result}}"
    turns:
      - tool_calls:
          - name: Read
            arguments: {file_path: calc.sh}
      - label: test
        tool_calls:
          - name: Bash
            arguments: {command: "./test.sh"}
      - unless_result_contains: "FAIL"
        text: "All tests pass: {{last_result}}"
      - max_times: 2
        tool_calls:
          - name: Edit
            arguments: {file_path: calc.sh, old_string: "$(( $1 - $2 ))", new_string: "$(( $1 + $2 ))"}
        goto: test
`

// TestYAMLAgentFixesARepoInItsWorktree is the agents issue's proof: a
// scripted agent reads a file of a real git repository, runs the
// repository's tests through Bash, edits the file and runs them again. The
// run works in a git worktree on its own branch; the original checkout is
// untouched.
func TestYAMLAgentFixesARepoInItsWorktree(t *testing.T) {
	repo := gitRepo(t, map[string]string{
		"calc.sh": "#!/bin/sh\necho $(( $1 - $2 ))\n",
		"test.sh": "#!/bin/sh\nif [ \"$(./calc.sh 2 3)\" = 5 ]; then echo ok; else echo FAIL: add 2 3 gave $(./calc.sh 2 3); fi\n",
	})
	sc, err := fakeopenai.ParseScript("fix.yaml", []byte(fixScript))
	if err != nil {
		t.Fatal(err)
	}
	srv := fakeopenai.StartT(t, fakeopenai.WithScript(sc))
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "test", RetryBase: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wtRoot := t.TempDir()
	e, rec := newTestEngine(t, Config{LLM: client, WorktreeRoot: wtRoot})
	src := "name: fix\ndescription: fix the repo\nworktree:\n  enabled: true\nnodes:\n" +
		"  - id: fix\n    prompt: Fix the failing test in this repository.\n    allowed_tools: [Read, Edit, Bash]\n"
	run, err := e.StartYAML(context.Background(), filepath.Join(repo, "wf.yaml"), []byte(src), StartOptions{WorkDir: repo})
	if err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, e, run.ID)
	if got.Status != StatusCompleted {
		t.Fatalf("%s: %s", got.Status, got.Error)
	}
	ns := nodeStates(t, e, run.ID)
	if out := ns["fix"].Output; out != "All tests pass: ok" {
		t.Errorf("output %q", out)
	}
	wt := filepath.Join(wtRoot, run.ID)
	if got.WorkDir != wt {
		t.Errorf("run works in %q, want its worktree %q", got.WorkDir, wt)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "calc.sh")); string(b) != "#!/bin/sh\necho $(( $1 + $2 ))\n" {
		t.Errorf("worktree calc.sh = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "calc.sh")); string(b) != "#!/bin/sh\necho $(( $1 - $2 ))\n" {
		t.Errorf("the original checkout changed: calc.sh = %q", b)
	}
	if st := gitIn(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("original checkout not clean: %q", st)
	}
	if br := gitIn(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); br != "switchyard/"+run.ID {
		t.Errorf("worktree branch %q", br)
	}
	// The transcript: Read, Bash (FAIL), Edit, Bash (ok), each logged with
	// its result.
	var calls []string
	for _, ev := range rec.events(run.ID) {
		switch ev.Type {
		case EvToolCall:
			var d toolCallData
			_ = json.Unmarshal(ev.Data, &d)
			calls = append(calls, d.Tool)
		case EvToolResult:
			var d toolResultData
			_ = json.Unmarshal(ev.Data, &d)
			if !d.OK {
				t.Errorf("tool %s failed: %s", d.Tool, ev.Content)
			}
		}
	}
	if strings.Join(calls, ",") != "Read,Bash,Edit,Bash" {
		t.Errorf("tool calls %v", calls)
	}
	// The request offered exactly the allowed tools.
	for _, req := range srv.Requests() {
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Name)
		}
		if strings.Join(names, ",") != "Read,Edit,Bash" {
			t.Errorf("offered tools %v, want Read,Edit,Bash", names)
		}
	}
	// Pruning removes the finished run's worktree and keeps its branch.
	removed, err := PruneWorktrees(context.Background(), e.Store(), wtRoot, false)
	if err != nil || len(removed) != 1 {
		t.Fatalf("prune: %v %v", removed, err)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	if br := gitIn(t, repo, "branch", "--list", "switchyard/"+run.ID); br == "" {
		t.Error("the run's branch was deleted with its worktree")
	}
}

// TestYAMLToolsOffered: allowed_tools: [] sends no tools; no field offers
// every built-in; denied_tools removes names.
func TestYAMLToolsOffered(t *testing.T) {
	e, _, srv := yamlLLMEngine(t)
	cases := []struct{ field, want string }{
		{"", "Read,Write,Edit,Glob,Grep,Bash,LS"},
		{"    allowed_tools: []\n", ""},
		{"    denied_tools: [Bash]\n", "Read,Write,Edit,Glob,Grep,LS"},
		{"    allowed_tools: [Read, Grep]\n", "Read,Grep"},
	}
	for _, c := range cases {
		srv.Reset()
		got, _ := runYAMLT(t, e, wf("  - id: a\n    prompt: hello\n"+c.field), "")
		if got.Status != StatusCompleted {
			t.Fatalf("%q: %s %s", c.field, got.Status, got.Error)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%q: %d requests", c.field, len(reqs))
		}
		var names []string
		for _, tl := range reqs[0].Tools {
			names = append(names, tl.Name)
		}
		if strings.Join(names, ",") != c.want {
			t.Errorf("%q: offered %v, want %q", c.field, names, c.want)
		}
		if c.want == "" && strings.Contains(string(reqs[0].Body), `"tools"`) {
			t.Errorf("%q: the request has a tools field: %s", c.field, reqs[0].Body)
		}
	}
}
