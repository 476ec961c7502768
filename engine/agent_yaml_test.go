package engine

import (
	"context"
	"encoding/json"
	"fmt"
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
	if br := e.WorktreeBranch(got); br != "switchyard/"+run.ID {
		t.Errorf("WorktreeBranch = %q", br)
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

const badCallsScript = `
rules:
  - match: "(?i)misbehave"
    turns:
      - tool_calls:
          - name: Read
            arguments: '{"file_path": "a.txt"'
          - name: Nope
            arguments: {x: 1}
          - name: Read
            arguments: {file_path: "../outside.txt"}
          - name: Read
            arguments: {file_path: "blob.bin"}
          - name: Read
            arguments: {file_path: 42}
          - name: Bash
            arguments: {command: "head -c 100000 /dev/zero | tr '\\0' x"}
          - name: Write
            arguments: {file_path: "/etc/switchyard-should-not-exist", content: "x"}
      - text: "survived"
`

// TestYAMLAgentBadToolCalls: unparsable arguments, an unknown tool, a path
// outside the workspace, a binary file, a wrong type and a huge output are
// each an error (or cut) result the model sees; nothing is written
// outside, and the node completes.
func TestYAMLAgentBadToolCalls(t *testing.T) {
	sc, err := fakeopenai.ParseScript("bad.yaml", []byte(badCallsScript))
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range []string{"chat", "responses"} {
		t.Run(api, func(t *testing.T) {
			srv := fakeopenai.StartT(t, fakeopenai.WithScript(sc))
			client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "test", Responses: api == "responses"})
			if err != nil {
				t.Fatal(err)
			}
			e, rec := newTestEngine(t, Config{LLM: client})
			parent := t.TempDir()
			dir := filepath.Join(parent, "ws")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			_ = os.WriteFile(filepath.Join(parent, "outside.txt"), []byte("secret"), 0o644)
			_ = os.WriteFile(filepath.Join(dir, "blob.bin"), []byte{0, 1, 2, 0, 'x'}, 0o644)
			run := startYAMLIn(t, e, dir, wf("  - id: a\n    prompt: misbehave please\n"), "")
			got := waitRun(t, e, run.ID)
			if got.Status != StatusCompleted {
				t.Fatalf("%s %s", got.Status, got.Error)
			}
			if out := nodeStates(t, e, run.ID)["a"].Output; out != "survived" {
				t.Errorf("output %q", out)
			}
			results := map[string]toolResultData{}
			texts := map[string]string{}
			var order []string
			for _, ev := range rec.ofType(run.ID, EvToolResult) {
				var d toolResultData
				_ = json.Unmarshal(ev.Data, &d)
				key := d.Tool + "#" + d.CallID
				results[key], texts[key] = d, ev.Content
				order = append(order, key)
			}
			if len(order) != 7 {
				t.Fatalf("%d results: %v", len(order), order)
			}
			want := []struct {
				tool, has string
				ok, cut   bool
			}{
				{"Read", "JSON", false, false},
				{"Nope", `no tool named "Nope"`, false, false},
				{"Read", "outside the workspace", false, false},
				{"Read", "binary", false, false},
				{"Read", "file_path", false, false},
				{"Bash", "output cut", true, true},
				{"Write", "outside the workspace", false, false},
			}
			// Results arrive in completion order; match them to the calls.
			var calls []toolCallData
			for _, ev := range rec.ofType(run.ID, EvToolCall) {
				var d toolCallData
				_ = json.Unmarshal(ev.Data, &d)
				calls = append(calls, d)
			}
			for k, w := range want {
				key := calls[k].Tool + "#" + calls[k].CallID
				d, text := results[key], texts[key]
				if d.Tool != w.tool || d.OK != w.ok || d.Cut != w.cut || !strings.Contains(text, w.has) {
					t.Errorf("call %d (%s): ok=%v cut=%v %q; want ok=%v cut=%v and %q", k, d.Tool, d.OK, d.Cut, cutUTF8(text, 200), w.ok, w.cut, w.has)
				}
			}
			if _, err := os.Stat("/etc/switchyard-should-not-exist"); err == nil {
				t.Error("a write landed outside the workspace")
			}
			// The model saw every result in its next request.
			last := srv.Requests()[len(srv.Requests())-1]
			if n := len(last.ToolResults()); n != 7 {
				t.Errorf("the model saw %d results, want 7", n)
			}
		})
	}
}

// TestYAMLAgentCancelStopsBash: cancelling a run stops its agent in the
// middle of a Bash call, whose process group is killed.
func TestYAMLAgentCancelStopsBash(t *testing.T) {
	sc, err := fakeopenai.ParseScript("sleep.yaml", []byte(`
rules:
  - match: "(?i)sleep"
    turns:
      - tool_calls:
          - name: Bash
            arguments: {command: "sleep 300 & echo $! > child.pid; wait"}
      - text: never
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
	dir := t.TempDir()
	run := startYAMLIn(t, e, dir, wf("  - id: a\n    prompt: sleep now\n"), "")
	pidFile := filepath.Join(dir, "child.pid")
	deadline := time.Now().Add(30 * time.Second)
	var pid int
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(pidFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			_, _ = fmtSscan(strings.TrimSpace(string(b)), &pid)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("the Bash call never started")
	}
	if _, err := e.Cancel(context.Background(), run.ID); err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, e, run.ID)
	if got.Status != StatusCancelled {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	for time.Now().Before(deadline) {
		if !processAlive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the Bash call's child %d outlived the cancel", pid)
}

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }

// processAlive reports whether pid is a live (not zombie) process.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// TestYAMLIncludedBlockRuns: an include: node's block runs as a namespaced
// sub-DAG after the include's dependencies, and $include.output is the
// block's final node; a run continued from its snapshot expands the same
// block even when the file has changed since.
func TestYAMLIncludedBlockRuns(t *testing.T) {
	e, _ := yamlEngine(t)
	dir := t.TempDir()
	block := "name: block\ndescription: a block\nnodes:\n" +
		"  - id: one\n    bash: echo one-$ARGUMENTS\n" +
		"  - id: two\n    bash: echo two-$one.output\n    depends_on: [one]\n"
	if err := os.WriteFile(filepath.Join(dir, "block.yaml"), []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	src := wf("  - id: first\n    bash: echo first\n" +
		"  - id: review\n    include: block\n    depends_on: [first]\n" +
		"  - id: last\n    bash: echo last-$review.output\n    depends_on: [review]\n")
	run := startYAMLIn(t, e, dir, src, "x")
	got := waitRun(t, e, run.ID)
	if got.Status != StatusCompleted {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	ns := nodeStates(t, e, run.ID)
	for id, want := range map[string]string{"first": "first", "review__one": "one-x", "review__two": "two-one-x", "last": "last-two-one-x"} {
		if ns[id] == nil || ns[id].Output != want {
			t.Errorf("%s: %+v, want output %q", id, ns[id], want)
		}
	}
	// The run's definition keeps the block: its plan re-parses without the file.
	if err := os.Remove(filepath.Join(dir, "block.yaml")); err != nil {
		t.Fatal(err)
	}
	stored, err := e.Store().GetRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.planFor(stored); err != nil {
		t.Errorf("re-plan after the block file is gone: %v", err)
	}
}

// TestForkYAMLRun: forking a YAML run at its second step reuses the
// first step's output (its side effect does not happen again) and runs
// the rest.
func TestForkYAMLRun(t *testing.T) {
	e, _ := yamlEngine(t)
	dir := t.TempDir()
	src := wf("  - id: one\n    bash: echo one >> trace; echo first-$ARGUMENTS\n" +
		"  - id: two\n    bash: echo two >> trace; echo second-$one.output\n    depends_on: [one]\n" +
		"  - id: three\n    bash: echo three >> trace; echo third-$two.output\n    depends_on: [two]\n")
	run := startYAMLIn(t, e, dir, src, "x")
	if got := waitRun(t, e, run.ID); got.Status != StatusCompleted {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	fork, err := e.Fork(context.Background(), run.ID, "two", ForkOptions{Pinned: map[string]string{"one": "edited"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, e, fork.ID); got.Status != StatusCompleted {
		t.Fatalf("fork %s %s", got.Status, got.Error)
	}
	ns := nodeStates(t, e, fork.ID)
	if ns["two"].Output != "second-edited" || ns["three"].Output != "third-second-edited" {
		t.Errorf("fork outputs two=%q three=%q", ns["two"].Output, ns["three"].Output)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "trace"))
	if string(b) != "one\ntwo\nthree\ntwo\nthree\n" {
		t.Errorf("trace %q: the fork must not run one again", b)
	}
}
