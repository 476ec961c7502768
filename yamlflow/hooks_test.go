package yamlflow

import (
	"strings"
	"testing"
	"time"
)

func parseHooksOf(t *testing.T, hooks string) (*Node, []Diagnostic) {
	t.Helper()
	src := "name: h\ndescription: hooks\nnodes:\n  - id: a\n    prompt: go\n    hooks:\n" + hooks
	wf, diags, _ := Parse("h.yaml", []byte(src))
	if wf == nil {
		t.Fatalf("no workflow: %v", diags)
	}
	return wf.Node("a"), diags
}

// TestHooksParsed: Archon's hook responses load into what the agent loop
// acts on, with the Claude Code precedence (hookSpecificOutput over the
// older decision and reason).
func TestHooksParsed(t *testing.T) {
	t.Parallel()
	n, diags := parseHooksOf(t, `
      PreToolUse:
        - matcher: "Write|Edit"
          response:
            hookSpecificOutput:
              hookEventName: PreToolUse
              permissionDecision: deny
              permissionDecisionReason: "read-only node"
        - matcher: Bash
          timeout: 30
          response: {decision: block, reason: "no shell here"}
        - matcher: "mcp__github__.*"
          response:
            decision: block
            hookSpecificOutput: {permissionDecision: ask, permissionDecisionReason: "a person decides"}
        - response:
            hookSpecificOutput: {additionalContext: "think first"}
      PostToolUse:
        - matcher: "*"
          response:
            systemMessage: "a file changed"
            decision: block
            reason: "run the tests now"
      PostToolUseFailure:
        - matcher: Bash
          response: {hookSpecificOutput: {additionalContext: "read the error"}}
`)
	for _, d := range diags {
		t.Errorf("unexpected diagnostic: %s", d)
	}
	hs := n.Hooks
	if hs == nil || len(hs.PreToolUse) != 4 || len(hs.PostToolUse) != 1 || len(hs.PostToolUseFailure) != 1 {
		t.Fatalf("hooks %+v", hs)
	}
	want := []struct{ decision, reason, context string }{
		{HookDeny, "read-only node", ""},
		{HookDeny, "no shell here", ""},
		{HookAsk, "a person decides", ""},
		{"", "", "think first"},
	}
	for i, w := range want {
		h := hs.PreToolUse[i]
		if h.Decision != w.decision || h.Reason != w.reason || h.Context != w.context {
			t.Errorf("PreToolUse[%d] = %+v, want %+v", i, h, w)
		}
	}
	if h := hs.PostToolUse[0]; h.Decision != HookBlock || h.Reason != "run the tests now" || h.SystemMessage != "a file changed" {
		t.Errorf("PostToolUse[0] = %+v", h)
	}
	for tool, want := range map[string][]int{
		"Write": {0, 3}, "Edit": {0, 3}, "Bash": {1, 3}, "NotebookWrite": {3},
		"mcp__github__create_issue": {2, 3}, "xmcp__github__a": {3},
	} {
		var got []int
		for i, h := range hs.PreToolUse {
			if h.Matches(tool) {
				got = append(got, i)
			}
		}
		if len(got) != len(want) || len(hs.For(HookPreToolUse, tool)) != len(want) {
			t.Errorf("%s matched by %v, want %v", tool, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s matched by %v, want %v", tool, got, want)
			}
		}
	}
	var nilHooks *Hooks
	if nilHooks.For(HookPreToolUse, "Bash") != nil {
		t.Error("nil hooks matched")
	}
}

// TestHooksDiagnostics: a hook Switchyard cannot act on says so, naming
// the node and field; a malformed one is an error.
func TestHooksDiagnostics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, hooks, severity, code, field, msg string
	}{
		{"other event", "      Stop:\n        - response: {decision: block}\n", SeverityWarning, CodeNotImplemented, "hooks.Stop", "Stop: not implemented"},
		{"unknown event", "      PreToolUs:\n        - response: {}\n", SeverityError, CodeInvalidHooks, "hooks.PreToolUs", `did you mean "PreToolUse"`},
		{"not a list", "      PreToolUse: {matcher: Bash}\n", SeverityError, CodeInvalidHooks, "hooks.PreToolUse", "must be a list"},
		{"no response", "      PreToolUse:\n        - matcher: Bash\n", SeverityError, CodeInvalidHooks, "hooks.PreToolUse[0]", "needs a response"},
		{"bad regexp", "      PreToolUse:\n        - matcher: \"Bash(\"\n          response: {}\n", SeverityError, CodeInvalidHooks, "hooks.PreToolUse[0].matcher", "not a valid regular expression"},
		{"bad decision", "      PreToolUse:\n        - response: {hookSpecificOutput: {permissionDecision: maybe}}\n", SeverityError, CodeInvalidHooks, "hooks.PreToolUse[0].response.hookSpecificOutput.permissionDecision", "allow, deny or ask"},
		{"bad legacy decision", "      PreToolUse:\n        - response: {decision: nope}\n", SeverityError, CodeInvalidHooks, "hooks.PreToolUse[0].response.decision", "approve or block"},
		{"updatedInput", "      PreToolUse:\n        - response: {hookSpecificOutput: {updatedInput: {command: ls}}}\n", SeverityWarning, CodeNotImplemented, "hooks.PreToolUse[0].response.hookSpecificOutput.updatedInput", "not implemented"},
		{"continue false", "      PostToolUse:\n        - response: {continue: false}\n", SeverityWarning, CodeNotImplemented, "hooks.PostToolUse[0].response.continue", "stopping the agent"},
		{"decision on post", "      PostToolUse:\n        - response: {hookSpecificOutput: {permissionDecision: deny}}\n", SeverityWarning, CodeFieldIgnored, "hooks.PostToolUse[0].response.hookSpecificOutput.permissionDecision", "PreToolUse only"},
		{"response and command", "      PreToolUse:\n        - command: ./check.sh\n          response: {}\n", SeverityError, CodeInvalidHooks, "hooks.PreToolUse[0]", "either a response or a command"},
		{"empty command", "      PreToolUse:\n        - command: \" \"\n", SeverityError, CodeInvalidHooks, "hooks.PreToolUse[0].command", "must not be empty"},
		{"bad timeout", "      PreToolUse:\n        - command: x\n          timeout: -1\n", SeverityError, CodeInvalidHooks, "hooks.PreToolUse[0].timeout", "positive number of seconds"},
		{"newer event", "      FileChanged:\n        - command: x\n", SeverityWarning, CodeNotImplemented, "hooks.FileChanged", "not implemented"},
		{"not a map", "      - x\n", SeverityError, CodeInvalidHooks, "hooks", "map of events"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, diags := parseHooksOf(t, tc.hooks)
			for _, d := range diags {
				if d.Severity == tc.severity && d.Code == tc.code && d.Field == tc.field && d.NodeID == "a" && d.Line > 0 && strings.Contains(d.Message, tc.msg) {
					return
				}
			}
			t.Errorf("want %s %s on %s containing %q; got %v", tc.severity, tc.code, tc.field, tc.msg, diags)
		})
	}
}

func TestSkillsParsed(t *testing.T) {
	t.Parallel()
	src := "name: s\ndescription: skills\nnodes:\n  - id: a\n    prompt: go\n    skills: [remotion-best-practices, \"../etc\", agent-browser]\n"
	wf, diags, _ := Parse("s.yaml", []byte(src))
	if wf == nil {
		t.Fatal(diags)
	}
	if got := wf.Node("a").Skills; len(got) != 2 || got[0] != "remotion-best-practices" || got[1] != "agent-browser" {
		t.Errorf("skills %q", got)
	}
	if len(diags) != 1 || diags[0].Severity != SeverityError || diags[0].Field != "skills" || !strings.Contains(diags[0].Message, `"../etc"`) {
		t.Errorf("diagnostics %v: want one error naming \"../etc\"", diags)
	}
}

// TestDeniedCallPatterns: denied_tools takes Claude Code's Tool(argument)
// rules, as the Claude SDK's disallowedTools does: the tool stays, the
// calls they name are refused. allowed_tools lists tools only.
func TestDeniedCallPatterns(t *testing.T) {
	t.Parallel()
	src := "name: s\ndescription: d\nnodes:\n  - id: a\n    prompt: go\n    denied_tools: [Write, \"Bash(git push:*)\", \"Bash(rm\"]\n    allowed_tools: [\"Bash(ls:*)\", Bash, Read]\n"
	wf, diags, _ := Parse("s.yaml", []byte(src))
	if wf == nil {
		t.Fatal(diags)
	}
	n := wf.Node("a")
	if len(n.DeniedTools) != 1 || n.DeniedTools[0] != "Write" || len(n.DeniedCalls) != 1 || n.DeniedCalls[0].Raw != "Bash(git push:*)" {
		t.Errorf("denied tools %q, calls %+v", n.DeniedTools, n.DeniedCalls)
	}
	if !n.ToolEnabled("Bash") || n.ToolEnabled("Write") {
		t.Errorf("Bash enabled %v, Write enabled %v", n.ToolEnabled("Bash"), n.ToolEnabled("Write"))
	}
	var deniedErr, allowedErr bool
	for _, d := range diags {
		deniedErr = deniedErr || (d.Field == "denied_tools" && d.Severity == SeverityError && strings.Contains(d.Message, `"Bash(rm"`))
		allowedErr = allowedErr || (d.Field == "allowed_tools" && d.Severity == SeverityError && strings.Contains(d.Message, `"Bash(ls:*)"`))
	}
	if !deniedErr || !allowedErr || len(diags) != 2 {
		t.Errorf("diagnostics %v: want an error for \"Bash(rm\" in denied_tools and one for \"Bash(ls:*)\" in allowed_tools", diags)
	}
}

func TestCommandHooks(t *testing.T) {
	t.Parallel()
	n, diags := parseHooksOf(t, "      PostToolUse:\n        - matcher: Write\n          command: ./lint.sh\n        - command: ./slow.sh\n          timeout: 1.5\n")
	if len(diags) != 0 {
		t.Fatalf("diagnostics %v", diags)
	}
	hs := n.Hooks.PostToolUse
	if len(hs) != 2 || hs[0].Command != "./lint.sh" || hs[0].Timeout != DefaultHookTimeout || hs[1].Timeout != 1500*time.Millisecond {
		t.Errorf("hooks %+v", hs)
	}
}

// TestParseHookOutput: what a command hook prints is read as the static
// responses are; anything but a JSON object is an error.
func TestParseHookOutput(t *testing.T) {
	t.Parallel()
	h, warns, err := ParseHookOutput(HookPreToolUse, []byte(`{"decision": "block", "hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "why", "updatedInput": {}}, "systemMessage": "m"}`+"\n"))
	if err != nil || h.Decision != HookAsk || h.Reason != "why" || h.SystemMessage != "m" || len(warns) != 1 || !strings.Contains(warns[0], "updatedInput") {
		t.Errorf("hook %+v, warnings %v, error %v", h, warns, err)
	}
	if h, _, err := ParseHookOutput(HookPostToolUse, []byte("  \n")); err != nil || h.Decision != "" {
		t.Errorf("empty output: %+v %v", h, err)
	}
	for _, bad := range []string{"not json", "decision: block", "[1]", `{"decision": "maybe"}`, "{"} {
		if _, _, err := ParseHookOutput(HookPreToolUse, []byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
