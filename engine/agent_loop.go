package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/proc"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/yamlflow"
)

// DefaultMaxTurns bounds the model turns of one agent loop (a YAML AI node,
// a loop iteration or a drawn agent) when the node sets no max_turns.
const DefaultMaxTurns = 50

// An agent loop is Temporal's activity rule applied to tool calls: every
// model turn that asks for tools is logged (llm_turn, tool_call), every
// finished call is logged (tool_result), and the results are made durable
// (Exec.Sync) before the next model turn starts. A loop that starts again
// after a crash rebuilds its conversation from those events (see
// agent_transcript.go) instead of asking the model again: finished calls are
// never run twice; a call that was in flight runs again.

// agentTool is one function offered to the model.
type agentTool struct {
	spec llm.ToolSpec
	// run performs the call. It never panics (see safeTool) and reports a
	// bad call as an error outcome the model sees.
	run func(ctx context.Context, tc llm.ToolCall) toolOutcome
	// diff describes what the call would change, for the reviewer.
	diff func(args json.RawMessage) string
}

// toolOutcome is a finished call: the text the model sees.
type toolOutcome struct {
	text    string
	isError bool
	cut     bool
	full    int // bytes before cutting
	denied  bool
	lost    bool   // not made: this process no longer holds the run
	note    string // what the node's hooks add for the model (after any cut)
}

// toolLoop drives one conversation with tools.
type toolLoop struct {
	a        *agentCall
	session  string // names this loop's events: "<visit>" or "<visit>/i<iteration>", subagents below their call
	req      llm.Request
	tools    []*agentTool
	byName   map[string]*agentTool
	maxTurns int
	deltas   *coalescer
	callID   string      // the subagent call this loop serves ("" at the top)
	frame    *usageFrame // usage frame of this loop's model calls (nil: the invocation's)
	// approve lists the calls that wait for a reviewer first
	// (approve_tools, data.tools.approve); none: never.
	approve []graph.ToolPattern
	// deny lists the calls refused without running (denied_tools'
	// Tool(argument) entries).
	deny []graph.ToolPattern
	// hooks are a YAML node's hooks: (nil: none; see yamlflow/hooks.go).
	hooks *yamlflow.Hooks
	// nested loops (subagents) cannot pause for a reviewer: a call that
	// needs approval there is refused with an error result.
	nested bool
	// what errors name the loop by: `agent "n1"` (formatted only for an
	// error: two fmt.Sprintf per step were a tenth of its allocations
	// outside the LLM client).
	labelKind, labelID string
}

func (l *toolLoop) label() string { return fmt.Sprintf("%s %q", l.labelKind, l.labelID) }

func newToolLoop(a *agentCall, session string, req llm.Request, tools []*agentTool, maxTurns int) *toolLoop {
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	l := &toolLoop{a: a, session: session, req: req, tools: tools, maxTurns: maxTurns,
		labelKind: "node", labelID: a.x.NodeID()}
	if len(tools) > 0 {
		l.byName = make(map[string]*agentTool, len(tools))
	}
	for _, t := range tools {
		l.byName[t.spec.Name] = t
		l.req.Tools = append(l.req.Tools, t.spec)
	}
	return l
}

// loopWait is the Wait state of a node whose tool call waits for a
// reviewer; executors wrap it in their own state.
type loopWait struct {
	Kind    string `json:"kind"` // "tool"
	Session string `json:"session"`
	CallID  string `json:"callId"`
}

// ErrMaxTurns is a loop that reached its turn cap without a final answer.
var ErrMaxTurns = errors.New("agent reached its turn limit without a final answer")

// run continues the conversation msgs (system and user first) from tr, the
// turns already logged (nil: none), until the model answers without tools.
// It returns the final text and the whole conversation; or a Wait when a
// call needs a reviewer (the node pauses; Resume continues from the log).
func (l *toolLoop) run(ctx context.Context, msgs []llm.Message, tr *transcript) (string, []llm.Message, *Wait, error) {
	if tr == nil {
		tr = &transcript{}
	}
	msgs = append(msgs, tr.msgs...)
	turns := tr.turns
	pending := tr.pending
	for {
		if pending == nil {
			if turns >= l.maxTurns {
				return "", msgs, nil, fmt.Errorf("%s: %w (%d turns; raise max_turns)", l.label(), ErrMaxTurns, l.maxTurns)
			}
			req := l.req
			req.Messages = msgs
			resp, err := l.a.complete(ctx, req, l.deltas, l.callID, l.frame)
			if err != nil {
				return "", msgs, nil, err
			}
			turns++
			if len(resp.ToolCalls) == 0 {
				return resp.Text, append(msgs, llm.Message{Role: "assistant", Content: resp.Text}), nil, nil
			}
			pending = l.logTurn(turns, resp)
		}
		if w := l.approvalWait(ctx, pending); w != nil {
			return "", msgs, w, nil
		}
		if err := l.runCalls(ctx, pending); err != nil {
			return "", msgs, nil, err
		}
		// The turn's results are durable before the model sees them: a
		// crash from here on never runs these calls again.
		if err := l.a.x.Sync(ctx); err != nil {
			return "", msgs, nil, fmt.Errorf("%s: save tool results: %w", l.label(), err)
		}
		msgs = append(msgs, pending.messages()...)
		pending = nil
	}
}

// logTurn logs a model turn that asked for tools and returns it pending.
func (l *toolLoop) logTurn(turn int, resp *llm.Response) *pendingTurn {
	calls := make([]llm.ToolCall, len(resp.ToolCalls))
	copy(calls, resp.ToolCalls)
	seen := map[string]bool{}
	for k := range calls {
		// Ids key results and approvals: make them present and unique
		// (some servers send none, or repeat them across a turn).
		if calls[k].ID == "" || seen[calls[k].ID] {
			calls[k].ID = fmt.Sprintf("%s-t%d-%d", l.a.x.NodeID(), turn, k)
		}
		seen[calls[k].ID] = true
	}
	td := turnData{Session: l.session, Turn: turn, ToolCalls: len(calls), ParentCallID: l.callID}
	if !l.nested {
		td.Usage = l.a.responseData("").Usage
	}
	l.a.x.Emit(EvLLMTurn, resp.Text, td)
	for _, tc := range calls {
		l.a.x.Emit(EvToolCall, toolSummary(tc.Name, tc.Arguments), toolCallData{Session: l.session, Turn: turn,
			CallID: tc.ID, Tool: tc.Name, Arguments: displayArgs(tc.Arguments), ParentCallID: l.callID})
	}
	return &pendingTurn{turn: turn, text: resp.Text, calls: calls,
		results: map[string]toolOutcome{}, decisions: map[string]Decision{}}
}

// approvalWait returns the wait for the first call of the turn that needs
// a reviewer and has no decision yet, or nil.
func (l *toolLoop) approvalWait(ctx context.Context, p *pendingTurn) *Wait {
	for _, tc := range p.calls {
		if _, done := p.results[tc.ID]; done {
			continue
		}
		if _, decided := p.decisions[tc.ID]; decided {
			continue
		}
		if pat, ok := graph.MatchCall(l.deny, tc.Name, []byte(tc.Arguments), l.a.x.WorkDir()); ok {
			p.results[tc.ID] = l.finish(p.turn, tc, toolOutcome{isError: true, denied: true,
				text: fmt.Sprintf("denied: denied_tools refuses %s here", pat.Raw)}, 0)
			continue
		}
		decision, reason := hookDecision(l.preHooks(ctx, p, tc))
		if decision == yamlflow.HookDeny {
			text := "denied by a hook"
			if reason != "" {
				text += ": " + reason
			}
			p.results[tc.ID] = l.finish(p.turn, tc, toolOutcome{isError: true, denied: true, text: text}, 0)
			continue
		}
		t := l.byName[tc.Name]
		if t == nil {
			continue
		}
		if decision != yamlflow.HookAsk {
			if len(l.approve) == 0 {
				continue
			}
			if _, ok := graph.MatchCall(l.approve, tc.Name, []byte(tc.Arguments), l.a.x.WorkDir()); !ok {
				continue
			}
		}
		if l.nested {
			p.results[tc.ID] = l.finish(p.turn, tc, toolOutcome{isError: true,
				text: fmt.Sprintf("error: %s needs a reviewer's approval, which a subagent cannot ask for; the call was not made", tc.Name)}, 0)
			continue
		}
		ta := &ToolApproval{CallID: tc.ID, Tool: tc.Name, Arguments: displayArgs(tc.Arguments)}
		if t.diff != nil {
			ta.Diff = t.diff(json.RawMessage(tc.Arguments))
		}
		st, _ := json.Marshal(loopWait{Kind: "tool", Session: l.session, CallID: tc.ID})
		prompt := fmt.Sprintf("Allow %s?", toolSummary(tc.Name, tc.Arguments))
		if decision == yamlflow.HookAsk && reason != "" {
			prompt += " (" + reason + ")"
		}
		return &Wait{Prompt: prompt, State: st, Tool: ta}
	}
	return nil
}

// runCalls runs the turn's unfinished calls concurrently and logs each
// result.
func (l *toolLoop) runCalls(ctx context.Context, p *pendingTurn) error {
	var todo []llm.ToolCall
	for _, tc := range p.calls {
		if _, done := p.results[tc.ID]; !done {
			todo = append(todo, tc)
		}
	}
	for _, tc := range todo {
		// PreToolUse hooks before any call starts: their commands run
		// one at a time, and the calls read the map without writing it.
		if d, ok := p.decisions[tc.ID]; !ok || d.Decision == "approve" {
			l.preHooks(ctx, p, tc)
		}
	}
	outs := make([]*toolOutcome, len(todo))
	var wg sync.WaitGroup
	for k, tc := range todo {
		wg.Add(1)
		go func() { // tool calls of one turn run concurrently
			defer wg.Done()
			start := time.Now()
			var out toolOutcome
			if d, ok := p.decisions[tc.ID]; ok && d.Decision != "approve" {
				note := strings.TrimSpace(d.Note)
				if note == "" {
					note = "no reason given"
				}
				out = toolOutcome{text: "denied by the reviewer: " + note, isError: true, denied: true}
			} else {
				out = l.call(ctx, tc)
				if ctx.Err() == nil && !out.lost {
					out.note = l.hookNote(ctx, tc, p.pre[tc.ID], out)
				}
			}
			if ctx.Err() != nil || out.lost {
				return // stopped, or not ours to make: not a result
			}
			res := l.finish(p.turn, tc, out, time.Since(start))
			outs[k] = &res
		}()
	}
	wg.Wait()
	for k, tc := range todo {
		if outs[k] != nil {
			p.results[tc.ID] = *outs[k]
		}
	}
	if l.a.x.r.leaseGone.Load() {
		return ErrLeaseLost
	}
	return ctx.Err()
}

// call runs one tool call; an unknown tool is an error result.
func (l *toolLoop) call(ctx context.Context, tc llm.ToolCall) (out toolOutcome) {
	t := l.byName[tc.Name]
	if t == nil {
		names := make([]string, 0, len(l.tools))
		for _, t := range l.tools {
			names = append(names, t.spec.Name)
		}
		return toolOutcome{isError: true, text: fmt.Sprintf("error: no tool named %q; the tools are: %s", tc.Name, strings.Join(names, ", "))}
	}
	// A driver that stalled past its lease calls nothing more: the process
	// that took the run over continues the loop from the log.
	if err := l.a.x.Engine().holdsRun(ctx, l.a.x.r); err != nil {
		return toolOutcome{isError: true, text: "error: " + err.Error(), lost: true}
	}
	defer func() {
		if p := recover(); p != nil {
			out = toolOutcome{isError: true, text: fmt.Sprintf("error: %s failed: internal error: %v", tc.Name, p)}
			l.a.x.Engine().log.Error("tool panicked", "tool", tc.Name, "panic", p)
		}
	}()
	return t.run(ctx, tc)
}

// finish cuts a result to the limit the model and the log share, logs it
// and returns what the model sees.
func (l *toolLoop) finish(turn int, tc llm.ToolCall, out toolOutcome, took time.Duration) toolOutcome {
	if out.full == 0 {
		out.full = len(out.text)
	}
	if len(out.text) > maxToolResult {
		out.text = cutUTF8(out.text, maxToolResult) + fmt.Sprintf("\n... [output cut: %d of %d bytes shown]", maxToolResult, out.full)
		out.cut = true
	}
	if out.note != "" {
		// After the cut: what the hooks add always reaches the model.
		out.text += "\n\n" + out.note
	}
	l.a.x.Emit(EvToolResult, out.text, toolResultData{Session: l.session, Turn: turn, CallID: tc.ID, Tool: tc.Name,
		OK: !out.isError, Denied: out.denied, Bytes: out.full, Cut: out.cut, DurationMs: took.Milliseconds(), ParentCallID: l.callID})
	return out
}

// pendingTurn is a model turn whose calls are not all finished.
type pendingTurn struct {
	turn      int
	text      string
	calls     []llm.ToolCall
	results   map[string]toolOutcome
	decisions map[string]Decision
	// pre are the calls' PreToolUse hooks, resolved (preHooks).
	pre map[string][]yamlflow.Hook
}

// messages are the turn as the model sees it: its own message, then one
// result per call, in call order.
func (p *pendingTurn) messages() []llm.Message {
	out := []llm.Message{{Role: "assistant", Content: p.text, ToolCalls: p.calls}}
	for _, tc := range p.calls {
		out = append(out, llm.Message{Role: "tool", ToolCallID: tc.ID, Content: p.results[tc.ID].text})
	}
	return out
}

// Event data of the agent loop.
type (
	turnData struct {
		Session      string `json:"session"`
		Turn         int    `json:"turn"`
		ToolCalls    int    `json:"toolCalls"`
		ParentCallID string `json:"parentCallId,omitempty"`
		// Usage is what the node's model calls cost so far (a loop
		// continued from the log starts counting from it).
		Usage *Usage `json:"usage,omitempty"`
	}
	toolCallData struct {
		Session      string          `json:"session"`
		Turn         int             `json:"turn"`
		CallID       string          `json:"callId"`
		Tool         string          `json:"tool"`
		Arguments    json.RawMessage `json:"arguments"`
		ParentCallID string          `json:"parentCallId,omitempty"`
	}
	toolResultData struct {
		Session      string `json:"session"`
		Turn         int    `json:"turn"`
		CallID       string `json:"callId"`
		Tool         string `json:"tool"`
		OK           bool   `json:"ok"`
		Denied       bool   `json:"denied,omitempty"`
		Bytes        int    `json:"bytes"`
		Cut          bool   `json:"cut,omitempty"`
		DurationMs   int64  `json:"durationMs"`
		ParentCallID string `json:"parentCallId,omitempty"`
	}
)

// Limits of what a tool call puts in the log.
const (
	// maxToolResult is the most of a result the model sees and the log
	// keeps (Claude Code cuts Bash output at 30,000 characters too).
	maxToolResult = 30000
	// maxArgField cuts a string argument (a Write's content) in the log;
	// a loop rebuilt from the log after a crash sees the cut value in the
	// model's own earlier call, which it made already.
	maxArgField = 64 << 10
)

// displayArgs returns the arguments as JSON with long strings cut; text
// that is not a JSON object is kept as a JSON string (cut too).
func displayArgs(args string) json.RawMessage {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		b, _ := json.Marshal(cutField(args))
		return b
	}
	if !hasLongString(v) {
		if json.Valid([]byte(args)) {
			return json.RawMessage(args)
		}
	}
	b, err := json.Marshal(cutStrings(v))
	if err != nil {
		b, _ = json.Marshal(cutField(args))
	}
	return b
}

func hasLongString(v any) bool {
	switch t := v.(type) {
	case string:
		return len(t) > maxArgField
	case map[string]any:
		for _, e := range t {
			if hasLongString(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if hasLongString(e) {
				return true
			}
		}
	}
	return false
}

func cutStrings(v any) any {
	switch t := v.(type) {
	case string:
		return cutField(t)
	case map[string]any:
		for k, e := range t {
			t[k] = cutStrings(e)
		}
	case []any:
		for k, e := range t {
			t[k] = cutStrings(e)
		}
	}
	return v
}

func cutField(s string) string {
	if len(s) <= maxArgField {
		return s
	}
	return cutUTF8(s, maxArgField) + fmt.Sprintf("... [cut: %d of %d bytes]", maxArgField, len(s))
}

// cutUTF8 returns at most n bytes of s, never splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// toolSummary is a tool_call event's one-line content: the tool and its
// most telling argument (Read calc.py, Bash: go test ./...).
func toolSummary(name, args string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(args), &m)
	for _, k := range []string{"command", "file_path", "path", "pattern", "input", "url", "query"} {
		if v, ok := m[k].(string); ok && v != "" {
			v = strings.Join(strings.Fields(v), " ")
			if len(v) > 120 {
				v = cutUTF8(v, 117) + "..."
			}
			if k == "command" || k == "input" {
				return name + ": " + v
			}
			return name + " " + v
		}
	}
	return name
}

// hookDecision is what a call's PreToolUse hooks decide together: deny over
// ask over allow, with the reason of the hook that decided.
func hookDecision(hooks []yamlflow.Hook) (decision, reason string) {
	rank := map[string]int{yamlflow.HookAllow: 1, yamlflow.HookAsk: 2, yamlflow.HookDeny: 3}
	for _, h := range hooks {
		if rank[h.Decision] > rank[decision] {
			decision, reason = h.Decision, h.Reason
		}
	}
	return decision, reason
}

// preHooks returns the call's PreToolUse hooks with their responses,
// resolved once per turn (a command hook runs then).
func (l *toolLoop) preHooks(ctx context.Context, p *pendingTurn, tc llm.ToolCall) []yamlflow.Hook {
	if l.hooks == nil {
		return nil
	}
	if hs, ok := p.pre[tc.ID]; ok {
		return hs
	}
	hs := l.resolveHooks(ctx, yamlflow.HookPreToolUse, tc, nil)
	if p.pre == nil {
		p.pre = map[string][]yamlflow.Hook{}
	}
	p.pre[tc.ID] = hs
	return hs
}

// hookNote is what the node's hooks add to a call's result for the model:
// the PreToolUse hooks' additionalContext, then the PostToolUse (or, for a
// failed call, PostToolUseFailure) hooks' additionalContext and the reason
// of their decision: block.
func (l *toolLoop) hookNote(ctx context.Context, tc llm.ToolCall, pre []yamlflow.Hook, out toolOutcome) string {
	if l.hooks == nil {
		return ""
	}
	post := yamlflow.HookPostToolUse
	if out.isError {
		post = yamlflow.HookPostToolUseFailure
	}
	var parts []string
	for _, h := range pre {
		if c := strings.TrimSpace(h.Context); c != "" {
			parts = append(parts, c)
		}
	}
	for _, h := range l.resolveHooks(ctx, post, tc, &out) {
		if c := strings.TrimSpace(h.Context); c != "" {
			parts = append(parts, c)
		}
		if r := strings.TrimSpace(h.Reason); h.Decision == yamlflow.HookBlock && r != "" {
			parts = append(parts, r)
		}
	}
	return strings.Join(parts, "\n\n")
}

// resolveHooks returns the event's hooks that apply to a call, with their
// responses: a command hook's is what it prints (one that fails is logged
// and left out, as in Archon). Their systemMessages go to the run log:
// Claude Code shows them to people, not to the model. out is the call's
// outcome after it ran (nil before).
func (l *toolLoop) resolveHooks(ctx context.Context, event string, tc llm.ToolCall, out *toolOutcome) []yamlflow.Hook {
	var res []yamlflow.Hook
	for _, h := range l.hooks.For(event, tc.Name) {
		data := map[string]any{"hook": event, "matcher": h.Matcher, "tool": tc.Name, "callId": tc.ID, "session": l.session}
		if h.Command != "" {
			r, warns, err := l.runHook(ctx, event, h, tc, out)
			for _, w := range warns {
				l.a.x.Emit(EvWarning, fmt.Sprintf("%s hook for %s: %s", event, tc.Name, w), data)
			}
			if err != nil {
				l.a.x.Emit(EvWarning, fmt.Sprintf("%s hook for %s: %v; its response is ignored", event, tc.Name, err), data)
				continue
			}
			r.Matcher = h.Matcher
			h = r
		}
		if msg := strings.TrimSpace(h.SystemMessage); msg != "" {
			l.a.x.Emit(EvWarning, fmt.Sprintf("%s hook for %s: %s", event, tc.Name, msg), data)
		}
		res = append(res, h)
	}
	return res
}

// runHook runs a command hook: bash in the run's folder with the node's
// environment, Claude Code's hook input as JSON on stdin; its stdout is
// the response.
func (l *toolLoop) runHook(ctx context.Context, event string, h yamlflow.Hook, tc llm.ToolCall, out *toolOutcome) (yamlflow.Hook, []string, error) {
	env, err := l.a.toolEnv()
	if err != nil {
		return yamlflow.Hook{}, nil, err
	}
	var input any = json.RawMessage(tc.Arguments)
	if !json.Valid([]byte(tc.Arguments)) {
		input = tc.Arguments
	}
	in := map[string]any{"session_id": l.a.x.RunID() + "/" + l.session, "hook_event_name": event, "cwd": env.Roots[0],
		"tool_name": tc.Name, "tool_input": input, "tool_use_id": tc.ID}
	if out != nil {
		if out.isError {
			in["error"] = out.text
		} else {
			in["tool_response"] = out.text
		}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return yamlflow.Hook{}, nil, err
	}
	penv := append([]string{}, env.ProcEnv...)
	stdout, stderr, err := env.RunProc(ctx, proc.Spec{Name: "bash", Args: []string{"-c", h.Command}, Dir: env.Roots[0],
		Expose: env.Roots, Env: penv, Timeout: h.Timeout, Stdin: bytes.NewReader(stdin), Output: func(string, string, bool) {}})
	if err != nil {
		if s := strings.TrimSpace(stderr); s != "" {
			err = fmt.Errorf("%w: %s", err, cutUTF8(s, 500))
		}
		return yamlflow.Hook{}, nil, fmt.Errorf("command failed: %w", err)
	}
	return yamlflow.ParseHookOutput(event, []byte(stdout))
}
