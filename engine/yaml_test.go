package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/internal/proc"
	"github.com/switchyard/switchyard/llm"
)

// ---- helpers ----

// yamlEngine is an engine without LLM for deterministic YAML workflows.
func yamlEngine(t *testing.T) (*Engine, *recorder) {
	t.Helper()
	return newTestEngine(t, Config{})
}

// yamlLLMEngine is an engine whose LLM is a fake OpenAI-compatible server.
func yamlLLMEngine(t *testing.T, opts ...fakeopenai.Option) (*Engine, *recorder, *fakeopenai.Server) {
	t.Helper()
	srv := fakeopenai.StartT(t, opts...)
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "test", RetryBase: 5 * time.Millisecond, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	e, rec := newTestEngine(t, Config{LLM: client})
	return e, rec, srv
}

// startYAMLT starts workflow source in a fresh working directory.
func startYAMLT(t *testing.T, e *Engine, src, input string, opts ...YAMLOption) *Run {
	t.Helper()
	return startYAMLIn(t, e, t.TempDir(), src, input, opts...)
}

func startYAMLIn(t *testing.T, e *Engine, dir, src, input string, opts ...YAMLOption) *Run {
	t.Helper()
	run, err := e.StartYAML(context.Background(), filepath.Join(dir, "wf.yaml"), []byte(src),
		StartOptions{Input: input, WorkDir: dir}, opts...)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return run
}

// runYAMLT runs a workflow to the end (or a pause) and returns the header
// and node states.
func runYAMLT(t *testing.T, e *Engine, src, input string, opts ...YAMLOption) (*Run, map[string]*NodeState) {
	t.Helper()
	run := startYAMLT(t, e, src, input, opts...)
	got := waitRun(t, e, run.ID)
	return got, nodeStates(t, e, run.ID)
}

func wf(nodes string) string {
	return "name: t\ndescription: test workflow\nnodes:\n" + nodes
}

func wantStatuses(t *testing.T, ns map[string]*NodeState, want map[string]NodeStatus) {
	t.Helper()
	for id, st := range want {
		got := ns[id]
		if got == nil {
			t.Errorf("node %s: missing", id)
			continue
		}
		if got.Status != st {
			t.Errorf("node %s: status %q (error %q), want %q", id, got.Status, got.Error, st)
		}
	}
}

func eventsOf(rec *recorder, runID, nodeID, typ string) []Event {
	var out []Event
	for _, ev := range rec.events(runID) {
		if (nodeID == "" || ev.NodeID == nodeID) && ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func hasEventContaining(rec *recorder, runID, nodeID, typ, sub string) bool {
	for _, ev := range eventsOf(rec, runID, nodeID, typ) {
		if strings.Contains(ev.Content, sub) {
			return true
		}
	}
	return false
}

// processGone reports whether pid no longer runs (a zombie counts as gone:
// nobody may be left to reap it in a container).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if k := strings.LastIndexByte(s, ')'); k >= 0 && k+2 < len(s) {
		return s[k+2] == 'Z'
	}
	return false
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ---- trigger rules ----

func TestYAMLTriggerRules(t *testing.T) {
	cases := []struct {
		name      string
		nodes     string
		want      map[string]NodeStatus
		runStatus RunStatus
	}{
		{"no dependencies runs", `
  - id: a
    bash: echo a
`, map[string]NodeStatus{"a": NodeCompleted}, StatusCompleted},
		{"all_success skips after a failure, and the skip propagates", `
  - id: ok
    bash: echo ok
  - id: bad
    bash: exit 1
  - id: join
    depends_on: [ok, bad]
    bash: echo join
  - id: after
    depends_on: [join]
    bash: echo after
`, map[string]NodeStatus{"ok": NodeCompleted, "bad": NodeFailed, "join": NodeSkipped, "after": NodeSkipped}, StatusFailed},
		{"one_success runs when one dependency succeeded", `
  - id: ok
    bash: echo ok
  - id: bad
    bash: exit 1
  - id: join
    depends_on: [ok, bad]
    trigger_rule: one_success
    bash: echo join
`, map[string]NodeStatus{"join": NodeCompleted}, StatusFailed},
		{"one_success skips when none succeeded", `
  - id: bad
    bash: exit 1
  - id: join
    depends_on: [bad]
    trigger_rule: one_success
    bash: echo join
`, map[string]NodeStatus{"join": NodeSkipped}, StatusFailed},
		{"none_failed_min_one_success runs with a skipped dependency", `
  - id: ok
    bash: echo ok
  - id: never
    bash: echo never
    when: "$ok.output == 'nope'"
    depends_on: [ok]
  - id: join
    depends_on: [ok, never]
    trigger_rule: none_failed_min_one_success
    bash: echo join
`, map[string]NodeStatus{"never": NodeSkipped, "join": NodeCompleted}, StatusCompleted},
		{"none_failed_min_one_success skips after a failure", `
  - id: ok
    bash: echo ok
  - id: bad
    bash: exit 3
  - id: join
    depends_on: [ok, bad]
    trigger_rule: none_failed_min_one_success
    bash: echo join
`, map[string]NodeStatus{"join": NodeSkipped}, StatusFailed},
		{"none_failed_min_one_success skips when all were skipped", `
  - id: ok
    bash: echo ok
  - id: never
    depends_on: [ok]
    when: "$ok.output == 'nope'"
    bash: echo never
  - id: join
    depends_on: [never]
    trigger_rule: none_failed_min_one_success
    bash: echo join
`, map[string]NodeStatus{"join": NodeSkipped}, StatusCompleted},
		{"all_done runs after failures", `
  - id: bad
    bash: exit 1
  - id: cleanup
    depends_on: [bad]
    trigger_rule: all_done
    bash: echo cleanup
`, map[string]NodeStatus{"bad": NodeFailed, "cleanup": NodeCompleted}, StatusFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, rec := yamlEngine(t)
			run, ns := runYAMLT(t, e, wf(tc.nodes), "")
			if run.Status != tc.runStatus {
				t.Errorf("run status %s (%s), want %s", run.Status, run.Error, tc.runStatus)
			}
			wantStatuses(t, ns, tc.want)
			checkSeq(t, rec.events(run.ID))
		})
	}
}

func TestYAMLNoLayerBarrier(t *testing.T) {
	// slow and fast start together; after-fast must not wait for slow.
	e, _ := yamlEngine(t)
	dir := t.TempDir()
	src := wf(`
  - id: slow
    bash: sleep 1; date +%s%N
  - id: fast
    bash: echo fast
  - id: after-fast
    depends_on: [fast]
    bash: date +%s%N
`)
	run := startYAMLIn(t, e, dir, src, "")
	waitRun(t, e, run.ID)
	ns := nodeStates(t, e, run.ID)
	slow, _ := strconv.ParseInt(ns["slow"].Output, 10, 64)
	after, _ := strconv.ParseInt(ns["after-fast"].Output, 10, 64)
	if after == 0 || slow == 0 || after >= slow {
		t.Fatalf("after-fast finished at %d, slow at %d: a layer barrier held it back", after, slow)
	}
}

// ---- when ----

func TestYAMLWhen(t *testing.T) {
	cases := []struct {
		name   string
		nodes  string
		status NodeStatus
		errSub string // node error or warning text
	}{
		{"true runs", `
  - id: src
    bash: echo '{"status":"ok","n":3}'
  - id: x
    depends_on: [src]
    when: "$src.output.status == 'ok' && $src.output.n > 2"
    bash: echo ran
`, NodeCompleted, ""},
		{"false skips", `
  - id: src
    bash: echo '{"status":"ok"}'
  - id: x
    depends_on: [src]
    when: "$src.output.status == 'fail'"
    bash: echo ran
`, NodeSkipped, ""},
		{"whole output compares", `
  - id: src
    bash: echo hello
  - id: x
    depends_on: [src]
    when: "$src.output == 'hello'"
    bash: echo ran
`, NodeCompleted, ""},
		{"a condition that does not parse skips with a warning quoting it", `
  - id: src
    bash: echo hello
  - id: x
    depends_on: [src]
    when: "$src.output = 'hello'"
    bash: echo ran
`, NodeSkipped, `"$src.output = 'hello'"`},
		{"a field of a non-JSON output fails the node", `
  - id: src
    bash: echo plain text
  - id: x
    depends_on: [src]
    when: "$src.output.status == 'ok'"
    bash: echo ran
`, NodeFailed, "not a JSON object"},
		{"a root node's condition applies too", `
  - id: x
    when: "$y.output == 'never'"
    bash: echo ran
  - id: y
    bash: echo y
`, NodeSkipped, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, rec := yamlEngine(t)
			run, ns := runYAMLT(t, e, wf(tc.nodes), "")
			wantStatuses(t, ns, map[string]NodeStatus{"x": tc.status})
			if tc.errSub != "" && !strings.Contains(ns["x"].Error, tc.errSub) &&
				!hasEventContaining(rec, run.ID, "x", EvWarning, tc.errSub) {
				t.Errorf("no error or warning containing %q; node error %q", tc.errSub, ns["x"].Error)
			}
		})
	}
}

// ---- variables ----

func TestYAMLVariables(t *testing.T) {
	cases := []struct {
		name   string
		nodes  string
		input  string
		opts   []YAMLOption
		want   string // output of node "x"
		failed string // x fails with an error containing this
		warn   string // a warning of x contains this
		llm    bool   // prompt nodes answer through the fake LLM ("echo: <prompt>")
	}{
		{name: "ARGUMENTS reaches bash through the environment", input: "it's a $(test) `x`",
			nodes: "  - id: x\n    bash: printf %s \"$ARGUMENTS\"\n", want: "it's a $(test) `x`"},
		{name: "ARGUMENTS in a prompt-mode message is raw", input: "in",
			nodes: "  - id: x\n    bash: printf %s \"${ARGUMENTS}-$WORKFLOW_ID\" | cut -c1-3\n", want: "in-"},
		{name: "DOCS_DIR defaults to docs/", nodes: "  - id: x\n    bash: printf %s $DOCS_DIR\n", want: "docs/"},
		{name: "DOCS_DIR configured", opts: []YAMLOption{WithDocsDir("manual/")},
			nodes: "  - id: x\n    bash: printf %s $DOCS_DIR\n", want: "manual/"},
		{name: "ARTIFACTS_DIR exists before the run", nodes: "  - id: x\n    bash: test -d \"$ARTIFACTS_DIR\" && echo yes\n", want: "yes"},
		{name: "BASE_BRANCH configured", opts: []YAMLOption{WithBaseBranch("trunk")},
			nodes: "  - id: x\n    bash: echo $BASE_BRANCH\n", want: "trunk"},
		{name: "BASE_BRANCH that cannot be found fails the node using it",
			nodes: "  - id: x\n    bash: echo $BASE_BRANCH\n", failed: "BASE_BRANCH"},
		{name: "unknown node output is empty with a warning",
			nodes: "  - id: x\n    bash: printf '[%s]' $ghost.output\n", want: "[]", warn: "ghost"},
		{name: "failed node output is empty", nodes: `
  - id: bad
    bash: echo partial; exit 1
  - id: x
    depends_on: [bad]
    trigger_rule: all_done
    bash: printf '[%s]' $bad.output
`, want: "[]"},
		{name: "skipped node output is empty", nodes: `
  - id: src
    bash: echo go
  - id: skipped
    depends_on: [src]
    when: "$src.output == 'stop'"
    bash: echo '{"a":1}'
  - id: x
    depends_on: [skipped, src]
    trigger_rule: one_success
    bash: printf '[%s]' $skipped.output
`, want: "[]"},
		{name: "a field of a skipped node fails the consumer (field not found)", nodes: `
  - id: src
    bash: echo go
  - id: skipped
    depends_on: [src]
    when: "$src.output == 'stop'"
    bash: echo '{"a":1}'
  - id: x
    depends_on: [skipped, src]
    trigger_rule: one_success
    bash: printf '[%s]' $skipped.output.a
`, failed: `field not found: node "skipped" has no output (skipped)`},
		{name: "a missing field fails the consumer, naming producer and field", nodes: `
  - id: src
    bash: echo '{"a":1}'
  - id: x
    depends_on: [src]
    bash: echo "$src.output.missing"
`, failed: `field not found: the output of node "src" has no field "missing"`},
		{name: "JSON null substitutes as null", nodes: `
  - id: src
    bash: echo '{"type":null}'
  - id: x
    depends_on: [src]
    when: "$src.output.type == 'null'"
    bash: printf '%s' "$src.output.type"
`, want: "null"},
		{name: "a fenced JSON block among prose is the node's JSON", nodes: `
  - id: src
    bash: |
      printf 'Here you go:\n` + "```" + `json\n{"k": "v", "o": {"a": [1, 2]}}\n` + "```" + `\nAnything else?'
  - id: x
    depends_on: [src]
    when: "$src.output.k == 'v'"
    bash: printf '%s|%s' "$src.output.k" "$src.output.o"
`, want: `v|{"a":[1,2]}`},
		{name: "USER_MESSAGE reaches bash like ARGUMENTS", nodes: `
  - id: x
    bash: printf '%s|%s' "$USER_MESSAGE" "$ARGUMENTS"
`, input: "hi there", want: "hi there|hi there"},
		{name: "context variables are empty when no context is given", nodes: `
  - id: x
    prompt: "[$CONTEXT|$ISSUE_CONTEXT|$EXTERNAL_CONTEXT]"
`, want: "echo: [||]", llm: true},
		{name: "JSON fields: strings raw, numbers and booleans as written, arrays as JSON", nodes: `
  - id: src
    bash: |
      echo '{"s":"it'"'"'s","n":4.50,"b":true,"arr":[1,"x"],"obj":{"k":null}}'
  - id: x
    depends_on: [src]
    bash: printf '%s|' $src.output.s $src.output.n $src.output.b $src.output.arr $src.output.obj
`, want: `it's|4.50|true|[1,"x"]|{"k":null}|`},
		{name: "a field of a non-JSON output fails the consuming node", nodes: `
  - id: src
    bash: echo not json
  - id: x
    depends_on: [src]
    bash: echo $src.output.field
`, failed: "not a JSON object"},
		{name: "outputs are never parsed by bash", nodes: `
  - id: src
    bash: |
      printf '%s' '$(touch pwned) ; touch pwned2 ` + "`touch pwned3`" + ` '"'"'; touch pwned4 #'
  - id: x
    depends_on: [src]
    bash: |
      printf %s $src.output; printf '|%s|' "$src.output" 'q:$src.output'
      ls pwned* 2>/dev/null || true
`, want: "$(touch pwned) ; touch pwned2 `touch pwned3` '; touch pwned4 #|$(touch pwned) ; touch pwned2 `touch pwned3` '; touch pwned4 #||q:$(touch pwned) ; touch pwned2 `touch pwned3` '; touch pwned4 #|"},
		{name: "{{PREVIOUS_OUTPUT}} in bash is quoted like outputs", nodes: `
  - id: src
    bash: printf '%s' '$(touch pwned); x'
  - id: x
    depends_on: [src]
    bash: printf '[%s]' {{PREVIOUS_OUTPUT}}; ls pwned 2>/dev/null || true
`, want: "[$(touch pwned); x]"},
		{name: "outputs reach scripts as strings, never as code", nodes: `
  - id: src
    bash: echo '{"n":41}'
  - id: x
    depends_on: [src]
    runtime: uv
    script: |
      import json
      v = json.loads($src.output)
      print(v["n"] + 1, "$ARGUMENTS")
`, input: "arg", want: "42 arg"},
	}
	uvOnPath(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, rec := yamlEngine(t)
			if tc.llm {
				e, rec, _ = yamlLLMEngine(t)
			}
			run, ns := runYAMLT(t, e, wf(tc.nodes), tc.input, tc.opts...)
			x := ns["x"]
			if tc.failed != "" {
				if x.Status != NodeFailed || !strings.Contains(x.Error, tc.failed) {
					t.Fatalf("x: status %s error %q, want failure containing %q", x.Status, x.Error, tc.failed)
				}
			} else {
				if x.Status != NodeCompleted {
					t.Fatalf("x: status %s error %q (run %s: %s)", x.Status, x.Error, run.Status, run.Error)
				}
				if x.Output != tc.want {
					t.Errorf("x output:\n got %q\nwant %q", x.Output, tc.want)
				}
			}
			if tc.warn != "" && !hasEventContaining(rec, run.ID, "", EvWarning, tc.warn) {
				t.Errorf("no warning containing %q", tc.warn)
			}
		})
	}
}

func TestYAMLWorkflowID(t *testing.T) {
	e, _ := yamlEngine(t)
	run, ns := runYAMLT(t, e, wf("  - id: x\n    bash: printf '%s %s' $WORKFLOW_ID \"$WORKFLOW_ID\"\n"), "")
	if want := run.ID + " " + run.ID; ns["x"].Output != want {
		t.Fatalf("got %q want %q", ns["x"].Output, want)
	}
}

func TestYAMLBaseBranchFromGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"},
		{"checkout", "-q", "-b", "feature"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	e, _ := yamlEngine(t)
	run := startYAMLIn(t, e, dir, wf("  - id: x\n    bash: echo $BASE_BRANCH\n"), "")
	waitRun(t, e, run.ID)
	if got := nodeStates(t, e, run.ID)["x"]; got.Output != "main" {
		t.Fatalf("BASE_BRANCH = %q (%s), want main", got.Output, got.Error)
	}
}

func TestYAMLLargeValuesReachBashWhole(t *testing.T) {
	big := strings.Repeat("abc'\"$x\n", 40000) // 320 KB, over the environment limit
	sum := sha256.Sum256([]byte(big))
	e, _ := yamlEngine(t)
	src := wf(`
  - id: a
    bash: printf '%s' "$ARGUMENTS"; printf 'END\n'
  - id: x
    depends_on: [a]
    bash: |
      printf '%s' "$ARGUMENTS" | sha256sum | cut -c1-64
      printf '%s' $a.output | wc -c
      test -f "$SWITCHYARD_ARGUMENTS_FILE" && echo file
`)
	run, ns := runYAMLT(t, e, src, big)
	if run.Status != StatusCompleted {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	want := hex.EncodeToString(sum[:]) + "\n" + strconv.Itoa(len(big)+3) + "\nfile"
	if got := ns["x"].Output; strings.Join(strings.Fields(got), "\n") != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestYAMLOutputType(t *testing.T) {
	e, _ := yamlEngine(t)
	run, ns := runYAMLT(t, e, wf("  - id: report\n    output_type: markdown\n    bash: printf '# Title\\n'\n"), "")
	if run.Status != StatusCompleted {
		t.Fatalf("run %s: %s (%+v)", run.Status, run.Error, ns["report"])
	}
	b, err := os.ReadFile(filepath.Join(e.cfg.ArtifactsRoot, run.ID, "nodes", "report.md"))
	if err != nil || string(b) != "# Title" {
		t.Fatalf("artifact %q, %v", b, err)
	}
}

// ---- bash processes ----

func TestYAMLBashStderrAndExit(t *testing.T) {
	e, rec := yamlEngine(t)
	run, ns := runYAMLT(t, e, wf(`
  - id: warn
    bash: echo out; echo careful >&2
  - id: bad
    bash: echo nope >&2; exit 7
`), "")
	if ns["warn"].Status != NodeCompleted || ns["warn"].Output != "out" {
		t.Errorf("warn: %+v", ns["warn"])
	}
	if !hasEventContaining(rec, run.ID, "warn", EvWarning, "careful") {
		t.Error("stderr on success is not a warning event")
	}
	if !strings.Contains(ns["bad"].Error, "exit status 7") || !strings.Contains(ns["bad"].Error, "nope") {
		t.Errorf("bad error %q: want exit status and stderr", ns["bad"].Error)
	}
	if !hasEventContaining(rec, run.ID, "warn", EvOutput, "out") {
		t.Error("stdout was not streamed as output events")
	}
}

func TestYAMLBashOutputEventsBounded(t *testing.T) {
	e, rec := yamlEngine(t)
	run, ns := runYAMLT(t, e, wf("  - id: loud\n    bash: seq 1 200000\n"), "")
	if run.Status != StatusCompleted {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	if lines := strings.Count(ns["loud"].Output, "\n") + 1; lines != 200000 {
		t.Fatalf("output kept %d lines, want 200000", lines)
	}
	total := 0
	evs := eventsOf(rec, run.ID, "loud", EvOutput)
	for _, ev := range evs {
		total += len(ev.Content)
	}
	if total > proc.MaxStreamed || len(evs) > 100 {
		t.Fatalf("%d output events with %d bytes: not bounded", len(evs), total)
	}
	if !hasEventContaining(rec, run.ID, "loud", EvWarning, "not streamed") {
		t.Error("no warning that the event log was capped")
	}
}

func TestYAMLBashTimeoutKillsGrandchildren(t *testing.T) {
	e, _ := yamlEngine(t)
	// The step must have started its child and written its pid before the
	// timeout: on a loaded machine bash can take longer than half a second
	// to get there, so the timeout doubles until it does. The kill of the
	// grandchild is what is tested.
	for ms := 500; ; ms *= 2 {
		dir := t.TempDir()
		run := startYAMLIn(t, e, dir, wf(fmt.Sprintf(`
  - id: slow
    timeout: %d
    bash: |
      sleep 100 &
      echo $! > grandchild.tmp && mv grandchild.tmp grandchild.pid
      wait
`, ms)), "")
		got := waitRun(t, e, run.ID)
		ns := nodeStates(t, e, run.ID)
		if got.Status != StatusFailed || !strings.Contains(ns["slow"].Error, fmt.Sprintf("timed out after %s", time.Duration(ms)*time.Millisecond)) {
			t.Fatalf("run %s, node error %q", got.Status, ns["slow"].Error)
		}
		b, err := os.ReadFile(filepath.Join(dir, "grandchild.pid"))
		if errors.Is(err, os.ErrNotExist) && ms < 32000 {
			continue // timed out before bash got to start its child
		}
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		waitGone(t, pid)
		return
	}
}

func TestYAMLCancelKillsGrandchildren(t *testing.T) {
	e, _ := yamlEngine(t)
	dir := t.TempDir()
	run := startYAMLIn(t, e, dir, wf(`
  - id: slow
    bash: |
      trap '' TERM
      sleep 100 &
      echo $! > grandchild.pid
      wait
`), "")
	pidFile := filepath.Join(dir, "grandchild.pid")
	deadline := time.Now().Add(60 * time.Second)
	var pid int
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the bash node never started its child")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := e.Cancel(context.Background(), run.ID); err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, e, run.ID); got.Status != StatusCancelled {
		t.Fatalf("run %s", got.Status)
	}
	waitGone(t, pid) // bash ignored SIGTERM: SIGKILL to the group after the grace got it
}

func TestYAMLRetry(t *testing.T) {
	e, rec := yamlEngine(t)
	dir := t.TempDir()
	run := startYAMLIn(t, e, dir, wf(`
  - id: flaky
    retry: {max_attempts: 3, delay_ms: 1000, on_error: all}
    bash: |
      n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count
      [ $n -ge 3 ] && echo done || exit 1
  - id: transient-only
    retry: {max_attempts: 3, delay_ms: 1000}
    bash: |
      echo x >> tries; exit 1
  - id: timeouts
    timeout: 100
    retry: {max_attempts: 1, delay_ms: 1000, on_error: transient}
    bash: sleep 30
`), "", withRetryUnit(time.Microsecond))
	waitRun(t, e, run.ID)
	ns := nodeStates(t, e, run.ID)
	if ns["flaky"].Status != NodeCompleted || ns["flaky"].Output != "done" {
		t.Errorf("flaky: %+v", ns["flaky"])
	}
	if n := len(eventsOf(rec, run.ID, "flaky", EvWarning)); n != 2 {
		t.Errorf("flaky: %d retry warnings, want 2", n)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tries")); strings.Count(string(b), "x") != 1 {
		t.Errorf("an ordinary exit 1 was retried with on_error transient: %q", b)
	}
	// Counted from the retry warnings, not from what the script wrote: under
	// load, a 100 ms timeout may kill bash before it writes anything.
	if n := len(eventsOf(rec, run.ID, "timeouts", EvWarning)); n != 1 || ns["timeouts"].Status != NodeFailed {
		t.Errorf("a timeout was not retried once with on_error transient: %d retry warnings, status %s", n, ns["timeouts"].Status)
	}
}

func TestYAMLMutatesCheckoutSerializesRuns(t *testing.T) {
	e, rec := yamlEngine(t)
	dir := t.TempDir()
	src := wf(`
  - id: a
    bash: echo "start $WORKFLOW_ID" >> log; sleep 0.3; echo "end $WORKFLOW_ID" >> log
  - id: b
    depends_on: [a]
    bash: echo "start $WORKFLOW_ID" >> log; sleep 0.1; echo "end $WORKFLOW_ID" >> log
`)
	r1 := startYAMLIn(t, e, dir, src, "")
	r2 := startYAMLIn(t, e, dir, src, "")
	for _, r := range []*Run{r1, r2} {
		if got := waitRun(t, e, r.ID); got.Status != StatusCompleted {
			t.Fatalf("run %s: %s %s", r.ID, got.Status, got.Error)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	lines := strings.Fields(string(b))
	// Each run's four lines must be contiguous: no interleaving.
	var order []string
	for i := 1; i < len(lines); i += 2 {
		if len(order) == 0 || order[len(order)-1] != lines[i] {
			order = append(order, lines[i])
		}
	}
	if len(order) != 2 {
		t.Fatalf("runs interleaved in the working directory:\n%s", b)
	}
	waiter := r2.ID
	if order[0] == r2.ID {
		waiter = r1.ID
	}
	if !hasEventContaining(rec, waiter, "", EvWarning, "waiting for the working directory") {
		t.Error("the waiting run has no warning saying so")
	}
	if _, err := os.Stat(filepath.Join(dir, ".switchyard", "checkout.lock")); err != nil {
		t.Errorf("no lock file: %v", err)
	}
}

func TestYAMLCancelNode(t *testing.T) {
	e, rec := yamlEngine(t)
	dir := t.TempDir()
	run := startYAMLIn(t, e, dir, wf(`
  - id: sibling
    bash: |
      sleep 100 &
      echo $! > sibling.pid
      wait
  - id: check
    bash: echo bad
  - id: stop
    depends_on: [check]
    when: "$check.output == 'bad'"
    cancel: "input was $check.output"
  - id: never
    depends_on: [stop]
    bash: echo never
`), "")
	got := waitRun(t, e, run.ID)
	if got.Status != StatusCancelled || got.Error != "input was bad" {
		t.Fatalf("run %s error %q", got.Status, got.Error)
	}
	ns := nodeStates(t, e, run.ID)
	if ns["never"].Status == NodeCompleted {
		t.Error("a node after the cancel ran")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sibling.pid")); err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		waitGone(t, pid)
	}
	if !hasEventContaining(rec, run.ID, SystemNodeID, EvWarning, "input was bad") {
		t.Error("no warning event with the cancel reason")
	}
}

func TestYAMLInvalidWorkflowDoesNotStart(t *testing.T) {
	e, _ := yamlEngine(t)
	_, err := e.StartYAML(context.Background(), "bad.yaml", []byte(wf("  - id: a\n    depends_on: [ghost]\n    bash: echo\n")),
		StartOptions{WorkDir: t.TempDir()})
	var inv *InvalidError
	if !errors.As(err, &inv) || !errors.Is(err, ErrInvalidWorkflow) || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("err %v", err)
	}
}

// uvOnPath puts the uv stand-in from testdata first on PATH.
func uvOnPath(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH (the uv stand-in needs it)")
	}
	bin := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "yaml", "bin", "uv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "uv"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestLoopSignal(t *testing.T) {
	cases := []struct {
		text, signal string
		found        bool
		clean        string
	}{
		{"work\n<promise>DONE</promise>", "DONE", true, "work"},
		{"work <done> DONE </done> more", "DONE", true, "work  more"},
		{"<a>DONE</b>", "DONE", false, "<a>DONE</b>"},
		{"all good\nDONE\n", "DONE", true, "all good"},
		{"finished. DONE.", "DONE", true, "finished."},
		{"finished DONE", "DONE", true, "finished"},
		{"I will say DONE when finished", "DONE", false, "I will say DONE when finished"},
		{"UNDONE", "DONE", false, "UNDONE"},
		{"text", "", false, "text"},
		{"ALL_TASKS_COMPLETE", "ALL_TASKS_COMPLETE", true, ""},
	}
	for _, c := range cases {
		if got := hasSignal(c.text, c.signal); got != c.found {
			t.Errorf("hasSignal(%q, %q) = %t", c.text, c.signal, got)
		}
		if got := stripSignal(c.text, c.signal); got != c.clean {
			t.Errorf("stripSignal(%q, %q) = %q, want %q", c.text, c.signal, got, c.clean)
		}
	}
}

func TestStripFrontMatter(t *testing.T) {
	cases := map[string]string{
		"---\ndescription: x\n---\n\nBody $ARGUMENTS": "Body $ARGUMENTS",
		"---\r\na: b\r\n---\r\nBody":                  "Body",
		"No front matter\n---\n":                      "No front matter\n---\n",
		"---\nunclosed: yes\nBody":                    "---\nunclosed: yes\nBody",
		"---\n---\n":                                  "",
	}
	for in, want := range cases {
		if got := stripFrontMatter(in); got != want {
			t.Errorf("stripFrontMatter(%q) = %q, want %q", in, got, want)
		}
	}
}

// archonFixtures is the shared Archon corpus, or "" when absent.
func archonFixtures(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "fixtures", "archon")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared fixtures not found at %s (../shared is absent)", dir)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// needBun skips when bun is not installed (CI: `npm install -g bun`).
func needBun(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bun"); err != nil {
		t.Skip("bun is not on PATH: install it with `npm install -g bun` to run script nodes with runtime bun")
	}
}

func TestYAMLE2EDeterministic(t *testing.T) {
	fx := archonFixtures(t)
	needBun(t)
	uvOnPath(t)
	file := filepath.Join(fx, "workflows", "test-workflows", "e2e-deterministic.yaml")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	e, rec := yamlEngine(t)
	run, err := e.StartYAML(context.Background(), file, src, StartOptions{WorkDir: t.TempDir()},
		WithScriptsDir(filepath.Join(fx, "scripts")))
	if err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, e, run.ID)
	ns := nodeStates(t, e, run.ID)
	if got.Status != StatusCompleted {
		for id, n := range ns {
			t.Logf("%s: %s %q %q", id, n.Status, n.Output, n.Error)
		}
		t.Fatalf("run %s: %s", got.Status, got.Error)
	}
	wantStatuses(t, ns, map[string]NodeStatus{"branch-true": NodeCompleted, "branch-false": NodeSkipped,
		"merge-node": NodeCompleted, "verify-all": NodeCompleted})
	want := map[string]string{
		"bash-echo":        `{"status":"ok","value":42}`,
		"script-bun":       `{"echoed":"no-input"}`,
		"script-python":    `{"echoed": "no-input"}`,
		"bash-read-output": `upstream-status: {"status":"ok","value":42}`,
		"merge-node":       "merge-ok: true=branch-true-ran false=",
	}
	for id, w := range want {
		if ns[id].Output != w {
			t.Errorf("%s output %q, want %q", id, ns[id].Output, w)
		}
	}
	if !strings.HasSuffix(ns["verify-all"].Output, "PASS: all deterministic nodes produced output") {
		t.Errorf("verify-all output %q", ns["verify-all"].Output)
	}
	checkSeq(t, rec.events(run.ID))
}

func TestYAMLScriptNodes(t *testing.T) {
	uvOnPath(t)
	e, _ := yamlEngine(t)
	dir := t.TempDir()
	scripts := filepath.Join(dir, ".switchyard", "scripts")
	if err := os.MkdirAll(scripts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scripts, "hello.py"), []byte("import os\nprint('hello', os.environ['ARGUMENTS'])\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := startYAMLIn(t, e, dir, wf(`
  - id: named
    script: hello
    runtime: uv
  - id: inline
    runtime: uv
    deps: [requests]
    script: |
      import sys
      print("inline")
      print("note", file=sys.stderr)
  - id: failing
    runtime: uv
    script: |
      import sys
      sys.exit("boom")
  - id: missing
    script: nowhere
    runtime: uv
`), "Ann")
	waitRun(t, e, run.ID)
	ns := nodeStates(t, e, run.ID)
	if ns["named"].Output != "hello Ann" || ns["inline"].Output != "inline" {
		t.Errorf("named %q inline %q (%s)", ns["named"].Output, ns["inline"].Output, ns["inline"].Error)
	}
	if !strings.Contains(ns["failing"].Error, "boom") {
		t.Errorf("failing error %q", ns["failing"].Error)
	}
	if e := ns["missing"].Error; !strings.Contains(e, `named script "nowhere"`) || !strings.Contains(e, scripts) {
		t.Errorf("missing error %q", e)
	}
}

func TestYAMLBunDeps(t *testing.T) {
	needBun(t)
	if os.Getenv("SWITCHYARD_TEST_NETWORK") == "" {
		t.Skip("installs a package from the npm registry: set SWITCHYARD_TEST_NETWORK=1")
	}
	t.Setenv("SWITCHYARD_CACHE_DIR", t.TempDir())
	e, _ := yamlEngine(t)
	run, ns := runYAMLT(t, e, wf(`
  - id: odd
    runtime: bun
    deps: [is-odd@3.0.1]
    script: |
      import isOdd from "is-odd";
      console.log(isOdd(3) ? "odd" : "even");
`), "")
	if run.Status != StatusCompleted || ns["odd"].Output != "odd" {
		t.Fatalf("run %s (%s): %+v", run.Status, run.Error, ns["odd"])
	}
}

// BenchmarkYAMLBashChain measures engine overhead per bash node: a chain
// of 10 nodes, each reading its predecessor's output.
func BenchmarkYAMLBashChain(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("  - id: n0\n    bash: echo 0\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&sb, "  - id: n%d\n    depends_on: [n%d]\n    bash: echo $((1 + $n%d.output))\n", i, i-1, i-1)
	}
	src := wf(sb.String())
	e, err := New(Config{ArtifactsRoot: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	dir := b.TempDir()
	b.ResetTimer()
	for range b.N {
		run, err := e.StartYAML(context.Background(), "bench.yaml", []byte(src), StartOptions{WorkDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		got, err := e.Wait(context.Background(), run.ID)
		if err != nil || got.Status != StatusCompleted {
			b.Fatalf("run %v %v", got, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*10), "µs/node")
}

// BenchmarkRenderBash measures substitution and rendering of a script
// with many references in mixed quoting contexts.
func BenchmarkRenderBash(b *testing.B) {
	script := strings.Repeat("echo $x.output \"$x.output\" '$x.output' $(printf %s $x.output)\ncat <<'E'\n$x.output\nE\n", 50)
	out := strings.Repeat("some output with 'quotes' and $dollars\n", 20)
	b.SetBytes(int64(len(script)))
	for range b.N {
		if _, _, err := substituteBash(script, out); err != nil {
			b.Fatal(err)
		}
	}
}

func TestYAMLMutatesCheckoutFalse(t *testing.T) {
	e, rec := yamlEngine(t)
	dir := t.TempDir()
	src := "name: t\ndescription: d\nmutates_checkout: false\nnodes:\n  - id: a\n    bash: sleep 0.2\n"
	r1 := startYAMLIn(t, e, dir, src, "")
	r2 := startYAMLIn(t, e, dir, src, "")
	for _, r := range []*Run{r1, r2} {
		if got := waitRun(t, e, r.ID); got.Status != StatusCompleted {
			t.Fatalf("run %s", got.Status)
		}
		if hasEventContaining(rec, r.ID, "", EvWarning, "waiting for the working directory") {
			t.Error("a run that does not mutate the checkout waited for it")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".switchyard")); err == nil {
		t.Error("lock folder created for a workflow with mutates_checkout: false")
	}
}
