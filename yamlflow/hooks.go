package yamlflow

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Hooks: an AI node's `hooks:`, Archon's per-node Claude Code hooks. Each
// event lists matchers with either a static `response`, the JSON a Claude
// Code hook would print, or a `command`: a shell command run in the run's
// folder with the node's environment, given the hook's input (Claude
// Code's JSON: hook_event_name, tool_name, tool_input, tool_use_id, cwd,
// and tool_response or error after the call) on stdin, whose stdout is
// that JSON (empty: no response). As in Archon, a command that fails (a
// non-zero exit, a timeout, output that is not such JSON) is logged and
// its response ignored. Switchyard acts on the tool events, in its own
// agent loop:
//
//   - PreToolUse, before a call: permissionDecision deny (or the older
//     decision: block) refuses the call, and the model gets the reason as
//     the call's error result; ask makes the call wait for a reviewer, as
//     approve_tools does; allow changes nothing (it never lifts
//     approve_tools: asking a person wins). additionalContext is added to
//     the result the model sees.
//   - PostToolUse (a call that succeeded) and PostToolUseFailure (one that
//     failed): additionalContext, and the reason of decision: block, are
//     added to the result the model sees.
//   - systemMessage, on any of them, is shown to people: a warning in the
//     run log, not something the model reads.
//
// The other events Archon accepts load with a not_implemented warning.

// DefaultHookTimeout bounds a command hook without a timeout (the Claude
// SDK's default).
const DefaultHookTimeout = 60 * time.Second

// Hook events Switchyard acts on.
const (
	HookPreToolUse         = "PreToolUse"
	HookPostToolUse        = "PostToolUse"
	HookPostToolUseFailure = "PostToolUseFailure"
)

// hookEvents are the events of the Archon format that Switchyard accepts
// but does not act on (no such point in its agent loop, or no meaning for
// a static response).
var hookEvents = set(
	"Notification", "UserPromptSubmit", "SessionStart", "SessionEnd", "Stop",
	"SubagentStart", "SubagentStop", "PreCompact", "PermissionRequest", "Setup",
	"TeammateIdle", "TaskCompleted", "Elicitation", "ElicitationResult",
	"ConfigChange", "WorktreeCreate", "WorktreeRemove", "InstructionsLoaded",
	"StopFailure", "PostCompact", "TaskCreated", "CwdChanged", "FileChanged",
)

// Hook decisions of a PreToolUse response.
const (
	HookAllow = "allow"
	HookDeny  = "deny"
	HookAsk   = "ask"
	HookBlock = "block" // decision: block (PostToolUse: the reason goes to the model)
)

// Hooks are a node's hooks by event.
type Hooks struct {
	PreToolUse         []Hook
	PostToolUse        []Hook
	PostToolUseFailure []Hook
}

// Hook is one matcher of an event with its response: the fields below, or
// what Command prints when it runs (see ParseHookOutput).
type Hook struct {
	Matcher string // as written; "" and "*" match every tool
	match   func(tool string) bool
	// Command, when set, gives the response at each call (the fields below
	// are then empty); Timeout bounds it.
	Command string
	Timeout time.Duration
	// Decision is allow, deny or ask (PreToolUse), or block; "" for none.
	Decision string
	// Reason is what the model is told with a decision
	// (permissionDecisionReason, or reason).
	Reason string
	// Context is additionalContext: added to the result the model sees.
	Context string
	// SystemMessage is shown to people (a warning in the run log).
	SystemMessage string
}

// Matches reports whether the hook applies to a call of the named tool: a
// matcher of plain names (Write, Write|Edit) names tools exactly; any other
// is a regular expression that must match the whole name
// (mcp__github__.*); an empty matcher or "*" matches every tool.
func (h Hook) Matches(tool string) bool { return h.match == nil || h.match(tool) }

// For returns the hooks of an event that apply to a call of tool.
func (hs *Hooks) For(event, tool string) []Hook {
	if hs == nil {
		return nil
	}
	var list []Hook
	switch event {
	case HookPreToolUse:
		list = hs.PreToolUse
	case HookPostToolUse:
		list = hs.PostToolUse
	case HookPostToolUseFailure:
		list = hs.PostToolUseFailure
	}
	var out []Hook
	for _, h := range list {
		if h.Matches(tool) {
			out = append(out, h)
		}
	}
	return out
}

var plainMatcher = regexp.MustCompile(`^[A-Za-z0-9_\-]+(\|[A-Za-z0-9_\-]+)*$`)

// compileMatcher turns a matcher into its test (nil: every tool).
func compileMatcher(m string) (func(string) bool, error) {
	m = strings.TrimSpace(m)
	switch {
	case m == "" || m == "*":
		return nil, nil
	case plainMatcher.MatchString(m):
		names := set(strings.Split(m, "|")...)
		return func(tool string) bool { return names[tool] }, nil
	}
	re, err := regexp.Compile(`^(?:` + m + `)$`)
	if err != nil {
		return nil, err
	}
	return re.MatchString, nil
}

var hookEntryKeys = set("matcher", "response", "command", "timeout")

// parseHooks reads `hooks:`.
func (p *parser) parseHooks(f field, v *yaml.Node) *Hooks {
	m := deref(v)
	if isNull(v) {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		p.errorf(f.line, f.node, f.name, CodeInvalidHooks, "hooks must be a map of events (PreToolUse: [...]), not %s", describe(m))
		return nil
	}
	hs := &Hooks{}
	found := false
	for _, e := range p.pairs(m, f.node, f.name) {
		ef := field{line: e.line, node: f.node, name: f.name + "." + e.key}
		var dst *[]Hook
		switch e.key {
		case HookPreToolUse:
			dst = &hs.PreToolUse
		case HookPostToolUse:
			dst = &hs.PostToolUse
		case HookPostToolUseFailure:
			dst = &hs.PostToolUseFailure
		default:
			if hookEvents[e.key] {
				p.warnf(e.line, f.node, ef.name, CodeNotImplemented, "hook event %s: not implemented by Switchyard (it acts on PreToolUse, PostToolUse and PostToolUseFailure); ignored", e.key)
				continue
			}
			msg := fmt.Sprintf("unknown hook event %q", e.key)
			if s := suggest(e.key, append(keys(hookEvents), HookPreToolUse, HookPostToolUse, HookPostToolUseFailure)); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			p.errorf(e.line, f.node, ef.name, CodeInvalidHooks, "%s", msg)
			continue
		}
		list := deref(e.val)
		if isNull(e.val) {
			continue
		}
		if list.Kind != yaml.SequenceNode {
			p.errorf(e.line, f.node, ef.name, CodeInvalidHooks, "%s must be a list of matchers ([{matcher: Write, response: {...}}]), not %s", e.key, describe(list))
			continue
		}
		for i, item := range list.Content {
			if h, ok := p.parseHook(ef, e.key, i, item); ok {
				*dst = append(*dst, h)
				found = true
			}
		}
	}
	if !found {
		return nil
	}
	return hs
}

func (p *parser) parseHook(f field, event string, i int, item *yaml.Node) (Hook, bool) {
	var h Hook
	m := deref(item)
	name := fmt.Sprintf("%s[%d]", f.name, i)
	line := f.line
	if m != nil {
		line = m.Line
	}
	if m == nil || m.Kind != yaml.MappingNode {
		p.errorf(line, f.node, name, CodeInvalidHooks, "a hook is a map ({matcher: Write, response: {...}}), not %s", describe(m))
		return h, false
	}
	var resp *yaml.Node
	respLine := 0
	for _, kv := range p.pairs(m, f.node, name) {
		sf := field{line: kv.line, node: f.node, name: name + "." + kv.key}
		switch kv.key {
		case "matcher":
			s, _ := p.str(sf, kv.val)
			match, err := compileMatcher(s)
			if err != nil {
				p.errorf(kv.line, f.node, sf.name, CodeInvalidHooks, "matcher %q is not a valid regular expression: %v", s, err)
				return h, false
			}
			h.Matcher, h.match = s, match
		case "response":
			resp, respLine = kv.val, kv.line
		case "command":
			c, _ := p.str(sf, kv.val)
			if strings.TrimSpace(c) == "" {
				p.errorf(kv.line, f.node, sf.name, CodeInvalidHooks, "command must not be empty")
				return h, false
			}
			h.Command = c
		case "timeout":
			t, ok := p.seconds(sf, kv.val)
			if !ok {
				return h, false
			}
			h.Timeout = t
		default:
			msg := "unknown field of a hook; ignored"
			if s := suggest(kv.key, keys(hookEntryKeys)); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			p.warnf(kv.line, f.node, sf.name, CodeUnknownField, "%s", msg)
		}
	}
	r := deref(resp)
	switch {
	case h.Command != "" && respLine > 0:
		p.errorf(line, f.node, name, CodeInvalidHooks, "a hook has either a response or a command, not both")
		return h, false
	case h.Command != "":
		if h.Timeout == 0 {
			h.Timeout = DefaultHookTimeout
		}
		return h, true
	case r == nil || isNull(resp):
		p.errorf(line, f.node, name, CodeInvalidHooks, "a hook needs a response (the output a Claude Code hook would give: {hookSpecificOutput: {...}} or {systemMessage: ...}) or a command that prints it")
		return h, false
	}
	if r.Kind != yaml.MappingNode {
		p.errorf(respLine, f.node, name+".response", CodeInvalidHooks, "response must be a map, not %s", describe(r))
		return h, false
	}
	return h, p.parseHookResponse(&h, field{line: respLine, node: f.node, name: name + ".response"}, event, r)
}

// parseHookResponse reads a response: the fields of a Claude Code hook's
// JSON output. hookSpecificOutput's decision and reason win over the older
// top-level decision and reason, as in Claude Code.
func (p *parser) parseHookResponse(h *Hook, f field, event string, r *yaml.Node) bool {
	ok := true
	var decision, reason string
	for _, kv := range p.pairs(r, f.node, f.name) {
		sf := field{line: kv.line, node: f.node, name: f.name + "." + kv.key}
		switch kv.key {
		case "systemMessage":
			h.SystemMessage, _ = p.str(sf, kv.val)
		case "reason":
			reason, _ = p.str(sf, kv.val)
		case "decision":
			d, _ := p.str(sf, kv.val)
			switch d {
			case "block":
				decision = HookBlock
				if event == HookPreToolUse {
					decision = HookDeny
				}
			case "approve":
				decision = HookAllow
			case "":
			default:
				p.errorf(kv.line, f.node, sf.name, CodeInvalidHooks, "decision must be approve or block, not %q", d)
				ok = false
			}
		case "continue":
			if !p.boolean(sf, kv.val, true) {
				p.warnf(kv.line, f.node, sf.name, CodeNotImplemented, "continue: false (stopping the agent) is not implemented by Switchyard; ignored")
			}
		case "stopReason", "suppressOutput":
			p.warnf(kv.line, f.node, sf.name, CodeNotImplemented, "%s is not implemented by Switchyard; ignored", kv.key)
		case "hookSpecificOutput":
			if !p.parseHookSpecific(h, sf, event, kv.val) {
				ok = false
			}
		default:
			p.warnf(kv.line, f.node, sf.name, CodeUnknownField, "unknown field of a hook response; ignored")
		}
	}
	if h.Decision == "" {
		h.Decision = decision
	}
	if h.Reason == "" {
		h.Reason = reason
	}
	return ok
}

func (p *parser) parseHookSpecific(h *Hook, f field, event string, v *yaml.Node) bool {
	m := deref(v)
	if isNull(v) {
		return true
	}
	if m.Kind != yaml.MappingNode {
		p.errorf(f.line, f.node, f.name, CodeInvalidHooks, "hookSpecificOutput must be a map, not %s", describe(m))
		return false
	}
	ok := true
	for _, kv := range p.pairs(m, f.node, f.name) {
		sf := field{line: kv.line, node: f.node, name: f.name + "." + kv.key}
		switch kv.key {
		case "hookEventName":
			if s, _ := p.str(sf, kv.val); s != "" && s != event {
				p.warnf(kv.line, f.node, sf.name, CodeInvalidHooks, "hookEventName %q under %s: the event is %s", s, event, event)
			}
		case "permissionDecision":
			d, _ := p.str(sf, kv.val)
			if event != HookPreToolUse {
				p.warnf(kv.line, f.node, sf.name, CodeFieldIgnored, "permissionDecision applies to PreToolUse only; ignored under %s", event)
				continue
			}
			switch d {
			case HookAllow, HookDeny, HookAsk:
				h.Decision = d
			default:
				p.errorf(kv.line, f.node, sf.name, CodeInvalidHooks, "permissionDecision must be allow, deny or ask, not %q", d)
				ok = false
			}
		case "permissionDecisionReason":
			h.Reason, _ = p.str(sf, kv.val)
		case "additionalContext":
			h.Context, _ = p.str(sf, kv.val)
		case "updatedInput", "updatedMCPToolOutput":
			p.warnf(kv.line, f.node, sf.name, CodeNotImplemented, "%s is not implemented by Switchyard; ignored", kv.key)
		default:
			p.warnf(kv.line, f.node, sf.name, CodeUnknownField, "unknown field of hookSpecificOutput; ignored")
		}
	}
	return ok
}

// seconds reads a positive number of seconds (a hook's timeout).
func (p *parser) seconds(f field, v *yaml.Node) (time.Duration, bool) {
	m := deref(v)
	var secs float64
	if m == nil || m.Kind != yaml.ScalarNode || m.Decode(&secs) != nil || secs <= 0 || secs > 86400 {
		p.errorf(f.line, f.node, f.name, CodeInvalidHooks, "timeout must be a positive number of seconds (at most a day)")
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

// ParseHookOutput reads what a command hook printed: a Claude Code hook's
// JSON output for event (empty output: no response). It returns the
// response as a Hook, warnings for what Switchyard does not act on, and
// an error when the output is not such JSON.
func ParseHookOutput(event string, out []byte) (Hook, []string, error) {
	var h Hook
	if len(strings.TrimSpace(string(out))) == 0 {
		return h, nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(out, &doc); err != nil || len(doc.Content) == 0 {
		return h, nil, fmt.Errorf("output is not a JSON object: %.200q", out)
	}
	m := deref(doc.Content[0])
	if m == nil || m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle == 0 {
		return h, nil, fmt.Errorf("output is not a JSON object: %.200q", out)
	}
	p := &parser{file: "hook output"}
	p.parseHookResponse(&h, field{line: 1, name: "output"}, event, m)
	var warns []string
	for _, d := range p.diags {
		if d.Severity == SeverityError {
			return Hook{}, nil, fmt.Errorf("%s: %s", d.Field, d.Message)
		}
		warns = append(warns, d.Field+": "+d.Message)
	}
	return h, warns, nil
}
