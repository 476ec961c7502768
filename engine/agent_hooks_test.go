package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// answerWithResults has the fake call tools (calls' answer) on the first
// turn, then answer prefix and the results it got, joined by " | ".
func answerWithResults(srv *fakeopenai.Server, prefix string, calls func() []fakeopenai.ToolCall) {
	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		var results []string
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results = append(results, m.Content)
			}
		}
		if len(results) > 0 {
			return fakeopenai.Reply{Text: prefix + strings.Join(results, " | ")}
		}
		return fakeopenai.Reply{ToolCalls: calls()}
	})
}

// TestYAMLHooksActOnToolCalls: a YAML node's hooks (Archon's static Claude
// Code hook responses) decide over its tool calls: a PreToolUse deny
// refuses the call and tells the model why, ask waits for a reviewer, and
// additionalContext and a PostToolUse block reason reach the model with
// the result; a systemMessage is logged for people.
func TestYAMLHooksActOnToolCalls(t *testing.T) {
	e, rec := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	var calls []fakeopenai.ToolCall
	answerWithResults(srv, "saw: ", func() []fakeopenai.ToolCall { return calls })
	args := func(m map[string]any) string { b, _ := json.Marshal(m); return string(b) }
	const hooks = `
    hooks:
      PreToolUse:
        - matcher: "Write|Edit"
          response:
            hookSpecificOutput:
              hookEventName: PreToolUse
              permissionDecision: deny
              permissionDecisionReason: "this node only reads"
        - matcher: Bash
          response:
            hookSpecificOutput: {permissionDecision: ask, permissionDecisionReason: "shell needs a person"}
        - matcher: Read
          response:
            hookSpecificOutput: {permissionDecision: allow, additionalContext: "mind the licence header"}
      PostToolUse:
        - matcher: Read
          response:
            systemMessage: "the agent read a file"
            decision: block
            reason: "summarise before reading more"
      PostToolUseFailure:
        - matcher: Bash
          response: {hookSpecificOutput: {additionalContext: "read the error before retrying"}}
`

	t.Run("deny", func(t *testing.T) {
		dir := t.TempDir()
		calls = []fakeopenai.ToolCall{{Name: "Write", Arguments: args(map[string]any{"file_path": "x.txt", "content": "no\n"})}}
		run := startYAMLIn(t, e, dir, wf("  - id: a\n    prompt: go\n"+hooks), "")
		got := waitRun(t, e, run.ID)
		if got.Status != StatusCompleted {
			t.Fatalf("%s %s", got.Status, got.Error)
		}
		if _, err := os.Stat(filepath.Join(dir, "x.txt")); err == nil {
			t.Error("a Write a hook denied wrote its file")
		}
		if out := nodeStates(t, e, run.ID)["a"].Output; out != "saw: denied by a hook: this node only reads" {
			t.Errorf("output %q", out)
		}
		res := rec.ofType(run.ID, EvToolResult)
		if len(res) != 1 || !strings.Contains(string(res[0].Data), `"denied":true`) {
			t.Errorf("tool results %+v", res)
		}
	})

	t.Run("ask, then approve", func(t *testing.T) {
		dir := t.TempDir()
		calls = []fakeopenai.ToolCall{{Name: "Bash", Arguments: args(map[string]any{"command": "echo ran >> log.txt; exit 3"})}}
		run := startYAMLIn(t, e, dir, wf("  - id: a\n    prompt: go\n"+hooks), "")
		got := waitRun(t, e, run.ID)
		if got.Status != StatusPaused || len(got.PendingApprovals) != 1 || got.PendingApprovals[0].Tool == nil ||
			!strings.Contains(got.PendingApprovals[0].Prompt, "shell needs a person") {
			t.Fatalf("%s %+v: want a wait naming the hook's reason", got.Status, got.PendingApprovals)
		}
		if _, err := os.Stat(filepath.Join(dir, "log.txt")); err == nil {
			t.Fatal("the Bash call ran before its approval")
		}
		if _, err := e.Resume(context.Background(), run.ID, "a", Decision{Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		got = waitRun(t, e, run.ID)
		if got.Status != StatusCompleted {
			t.Fatalf("%s %s", got.Status, got.Error)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "log.txt")); string(b) != "ran\n" {
			t.Errorf("log.txt %q: the approved call should run once", b)
		}
		// It failed (exit 3): PostToolUseFailure's context follows the result.
		out := nodeStates(t, e, run.ID)["a"].Output
		if !strings.Contains(out, "Exit code 3") || !strings.HasSuffix(out, "\n\nread the error before retrying") {
			t.Errorf("output %q", out)
		}
	})

	t.Run("context and messages", func(t *testing.T) {
		dir := t.TempDir()
		_ = os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644)
		calls = []fakeopenai.ToolCall{{Name: "Read", Arguments: args(map[string]any{"file_path": "a.txt"})}}
		run := startYAMLIn(t, e, dir, wf("  - id: a\n    prompt: go\n    approve_tools: [Read]\n"+hooks), "")
		got := waitRun(t, e, run.ID)
		// A hook's allow does not lift approve_tools: the person is asked.
		if got.Status != StatusPaused {
			t.Fatalf("%s: a hook's allow skipped approve_tools", got.Status)
		}
		if _, err := e.Resume(context.Background(), run.ID, "a", Decision{Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		if got = waitRun(t, e, run.ID); got.Status != StatusCompleted {
			t.Fatalf("%s %s", got.Status, got.Error)
		}
		out := nodeStates(t, e, run.ID)["a"].Output
		if !strings.Contains(out, "hello") || !strings.HasSuffix(out, "\n\nmind the licence header\n\nsummarise before reading more") {
			t.Errorf("output %q: want the result, then the hooks' context", out)
		}
		var warned bool
		for _, ev := range rec.ofType(run.ID, EvWarning) {
			if strings.Contains(ev.Content, "PostToolUse hook for Read: the agent read a file") {
				warned = true
			}
		}
		if !warned {
			t.Error("the systemMessage was not logged")
		}
		for _, r := range srv.Requests() {
			for _, m := range r.Messages {
				if strings.Contains(m.Content, "the agent read a file") {
					t.Error("the model was sent a systemMessage, which is for people")
				}
			}
		}
	})
}

// TestYAMLDeniedCallPatterns: denied_tools' Tool(argument) entries refuse
// the calls they name (seen through the shell as approval patterns are)
// and leave the tool's other calls alone.
func TestYAMLDeniedCallPatterns(t *testing.T) {
	e, _ := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	answerWithResults(srv, "", func() []fakeopenai.ToolCall {
		return []fakeopenai.ToolCall{
			{Name: "Bash", Arguments: `{"command":"cd . && git push origin main; touch pushed"}`},
			{Name: "Bash", Arguments: `{"command":"echo fine"}`},
		}
	})
	dir := t.TempDir()
	run := startYAMLIn(t, e, dir, wf("  - id: a\n    prompt: go\n    denied_tools: [\"Bash(git push:*)\"]\n"), "")
	got := waitRun(t, e, run.ID)
	if got.Status != StatusCompleted {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	if out := nodeStates(t, e, run.ID)["a"].Output; out != "denied: denied_tools refuses Bash(git push:*) here | fine" {
		t.Errorf("output %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "pushed")); err == nil {
		t.Error("a refused call ran")
	}
}

// TestYAMLCommandHooks: a hook with a command runs it (bash in the run's
// folder, the hook input as JSON on stdin) and acts on the JSON it prints;
// a command that fails or prints something else is logged and ignored.
func TestYAMLCommandHooks(t *testing.T) {
	e, rec := newLLMEngine(t, Config{})
	srv := testFake[t.Name()]
	answerWithResults(srv, "", func() []fakeopenai.ToolCall {
		return []fakeopenai.ToolCall{
			{Name: "Bash", Arguments: `{"command":"rm -f keep.txt"}`},
			{Name: "Bash", Arguments: `{"command":"echo hi"}`},
		}
	})
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("x"), 0o644)
	src := wf(`  - id: a
    prompt: go
    hooks:
      PreToolUse:
        - matcher: Bash
          command: |
            input=$(cat)
            printf '%s\n' "$input" >> hook-input.log
            case "$input" in
              *'"rm '*) echo '{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no rm"}}' ;;
              *) echo '{}' ;;
            esac
        - matcher: Bash
          command: exit 3
        - matcher: Bash
          command: echo not json
      PostToolUse:
        - matcher: Bash
          timeout: 30
          command: |
            input=$(cat)
            case "$input" in *'"tool_response":"hi"'*) r=yes ;; *) r=no ;; esac
            echo "{\"hookSpecificOutput\": {\"additionalContext\": \"post hook saw the output: $r\"}}"
`)
	run := startYAMLIn(t, e, dir, src, "")
	got := waitRun(t, e, run.ID)
	if got.Status != StatusCompleted {
		t.Fatalf("%s %s", got.Status, got.Error)
	}
	if out := nodeStates(t, e, run.ID)["a"].Output; out != "denied by a hook: no rm | hi\n\npost hook saw the output: yes" {
		t.Errorf("output %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep.txt")); err != nil {
		t.Error("the call a command hook denied ran")
	}
	log, _ := os.ReadFile(filepath.Join(dir, "hook-input.log"))
	for _, want := range []string{`"hook_event_name":"PreToolUse"`, `"tool_name":"Bash"`, `"tool_input":{"command":"rm -f keep.txt"}`, `"cwd":"` + dir + `"`, `"tool_use_id":"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("hook input lacks %s:\n%s", want, log)
		}
	}
	var failed, notJSON int
	for _, ev := range rec.ofType(run.ID, EvWarning) {
		if strings.Contains(ev.Content, "command failed") && strings.Contains(ev.Content, "response is ignored") {
			failed++
		}
		if strings.Contains(ev.Content, "output is not a JSON object") {
			notJSON++
		}
	}
	if failed != 2 || notJSON != 2 {
		t.Errorf("warnings: %d failed commands, %d non-JSON outputs; want 2 each (one per call)", failed, notJSON)
	}
}
