package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/llm"
)

// DefaultSystemPrompt is an agent's system prompt when it sets none.
const DefaultSystemPrompt = "You are a helpful assistant."

type agentExec struct{}

func (agentExec) Execute(ctx context.Context, x *Exec) (Result, error) {
	return runAgentNode(ctx, x, nil)
}

// Resume answers a tool call of the agent that waited for a reviewer.
func (agentExec) Resume(ctx context.Context, x *Exec, d Decision) (Result, error) {
	return runAgentNode(ctx, x, &d)
}

// runAgentNode runs a drawn agent: its tool loop from the start, or, after
// a crash or a reviewer's decision, from what the log holds.
func runAgentNode(ctx context.Context, x *Exec, d *Decision) (Result, error) {
	n := x.Spec().(graph.Node)
	client, err := x.Engine().LLM()
	if err != nil {
		return Result{}, err
	}
	vars := execVars{x}
	user := n.Data.UserPrompt
	if strings.TrimSpace(user) == "" {
		user = x.Input
	} else if user, err = x.substitute(user, vars); err != nil {
		return Result{}, err
	}
	system := n.Data.SystemPrompt
	if strings.TrimSpace(system) == "" {
		system = DefaultSystemPrompt
	} else if system, err = x.substitute(system, vars); err != nil {
		return Result{}, err
	}
	a := &agentCall{x: x, llm: client, subagents: x.r.plan.subagentsOf(), continuing: d != nil || x.Attempt > 1}
	session := fmt.Sprintf("v%d", x.Visit)
	tr, err := a.resumeTranscript(ctx, session, d)
	if err != nil {
		return Result{}, err
	}
	if tr == nil || (tr.turns == 0 && tr.pending == nil) {
		d := startPromptData{Model: client.Model(n.Data.Model), SystemPrompt: system}
		x.r.emitRaw(x.node.id, EvStartPrompt, user, d.appendJSON(make([]byte, 0, 48+len(system))))
	} else {
		a.restoreUsage(tr)
	}
	text, wait, err := a.run(ctx, n, system, user, 0, session, nil, tr)
	if err != nil {
		return Result{}, err
	}
	if wait != nil {
		return Result{Wait: wait}, nil
	}
	x.Emit(EvLLMResponse, text, a.responseData(client.Model(n.Data.Model)))
	return Result{Output: text}, nil
}

// substitute resolves variables in s, logging warnings as events.
func (x *Exec) substitute(s string, src VarSource) (string, error) {
	out, warns, err := Substitute(s, x.Input, src, nil)
	for _, w := range warns {
		x.Emit(EvWarning, w.Message, nil)
	}
	return out, err
}

// agentCall runs one agent invocation (a drawn agent with its subagents,
// or a YAML AI node) with its tools.
type agentCall struct {
	x         *Exec
	llm       *llm.Client
	subagents map[string][]graph.Node
	usage     usageFrame // every model call of this invocation, subagents' included
	mu        sync.Mutex // guards the usage frames
	// continuing is set when the node may have logged turns already (a
	// reviewer's decision, or a run continued after a crash): its loops
	// rebuild themselves from the log (agent_transcript.go).
	continuing bool
	logMu      sync.Mutex
	logLoaded  bool
	logged     []Event
	// env is what built-in tools may touch (made on first use).
	envOnce sync.Once
	env     *toolsEnv
}

// usageFrame counts the model calls of one agent run and, through
// parent, of the runs that called it as a subagent.
type usageFrame struct {
	u      Usage
	parent *usageFrame
}

// llmResponseData is an llm_response event's data. Usage covers every
// model call behind the response (tool-call rounds and subagents); it is
// absent when the provider reported none.
type llmResponseData struct {
	Model string `json:"model"`
	Usage *Usage `json:"usage,omitempty"`
}

func (a *agentCall) responseData(model string) llmResponseData {
	a.mu.Lock()
	defer a.mu.Unlock()
	d := llmResponseData{Model: model}
	if !a.usage.u.IsZero() {
		u := a.usage.u
		d.Usage = &u
	}
	return d
}

// subagentData is the data of subagent_call_end and _error events: what
// that subagent call cost, its own subagents included (absent if nothing
// was reported).
type subagentData struct {
	Usage *Usage `json:"usage,omitempty"`
}

func (a *agentCall) frameData(f *usageFrame) any {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f.u.IsZero() {
		return nil
	}
	u := f.u
	return subagentData{Usage: &u}
}

// record counts one model call: in its frame and those above it (nil: the
// invocation's own), and in the run.
func (a *agentCall) record(f *usageFrame, model string, lu llm.Usage) {
	if lu.IsZero() {
		return
	}
	u := Usage{PromptTokens: lu.PromptTokens, CompletionTokens: lu.CompletionTokens, TotalTokens: lu.TotalTokens}
	if c, ok := a.x.Engine().cfg.Prices.Cost(model, lu); ok {
		u.CostUSD = &c
	}
	if f == nil {
		f = &a.usage
	}
	a.mu.Lock()
	for ; f != nil; f = f.parent {
		f.u = f.u.Add(u)
	}
	a.mu.Unlock()
	a.x.r.addUsage(u)
}

// SubagentToolName is the function name under which a subagent is offered.
func SubagentToolName(n graph.Node) string {
	slug := make([]byte, 0, len(n.Data.AgentName))
	for _, c := range strings.ToLower(n.Data.AgentName) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			slug = append(slug, byte(c))
		default:
			if len(slug) > 0 && slug[len(slug)-1] != '_' {
				slug = append(slug, '_')
			}
		}
	}
	s := strings.Trim(string(slug), "_")
	if s == "" {
		s = "agent"
	}
	name := "subagent_" + s + "_" + n.ID
	if len(name) > 64 { // the API limit on function names
		keep := 64 - len("subagent__") - len(n.ID)
		if keep < 1 {
			keep = 1
		}
		if keep < len(s) {
			s = s[:keep]
		}
		name = "subagent_" + s + "_" + n.ID
		if len(name) > 64 {
			name = name[:64]
		}
	}
	return name
}

type subagentEvent struct {
	ParentNodeID   string `json:"parentNodeId"`
	SubagentNodeID string `json:"subagentNodeId"`
	SubagentName   string `json:"subagentName"`
	CallID         string `json:"callId"`
	ParentCallID   string `json:"parentCallId,omitempty"`
	Depth          int    `json:"depth"`
	Message        string `json:"message,omitempty"`
}

func (e subagentEvent) String() string {
	b, _ := json.Marshal(e)
	return string(b)
}

// run drives the tool loop of node n at the given depth (0 = the node
// itself) in session and returns the final text, or the wait for a
// reviewer. Its model calls count in f (nil: the invocation's own frame).
// tr is what the log already holds of the session (nil: nothing).
func (a *agentCall) run(ctx context.Context, n graph.Node, system, user string, depth int, session string, f *usageFrame, tr *transcript) (string, *Wait, error) {
	children := a.subagents[n.ID]
	if !n.SubagentsEnabled() {
		children = nil
	}
	var tools []*agentTool
	for _, c := range children {
		desc := c.Data.SystemPrompt
		if desc == "" {
			desc = "Ask the " + c.Data.AgentName + " agent."
		}
		tools = append(tools, &agentTool{
			spec: llm.ToolSpec{Name: SubagentToolName(c), Description: desc, Parameters: map[string]any{
				"type":       "object",
				"properties": map[string]any{"input": map[string]any{"type": "string", "description": "What to ask the agent."}},
				"required":   []string{"input"},
			}},
			run: func(ctx context.Context, tc llm.ToolCall) toolOutcome {
				return a.callSubagent(ctx, n, c, tc, depth, session, f)
			},
		})
	}
	pol := graphToolPolicy(n)
	bt, err := a.builtinTools(pol)
	if err != nil {
		return "", nil, err
	}
	tools = append(tools, bt...)
	if t := n.Data.Tools; t != nil && len(t.MCP) > 0 {
		mt, err := a.mcpTools(ctx, a.x.Engine().cfg.MCP, t.MCP, nil)
		if err != nil {
			return "", nil, fmt.Errorf("agent %q: %w", n.ID, err)
		}
		tools = append(tools, mt...)
	}
	l := newToolLoop(a, session, llm.Request{Model: n.Data.Model, Effort: n.Data.ReasoningEffort, WebSearch: n.WebSearchEnabled()},
		tools, DefaultMaxTurns)
	l.frame = f
	l.approve = pol.approve
	l.labelKind, l.labelID = "agent", n.ID
	if depth == 0 {
		l.deltas = newCoalescer(a.x)
	} else {
		l.nested = true
		l.callID = session
	}
	text, _, wait, err := l.run(ctx, []llm.Message{{Role: "system", Content: system}, {Role: "user", Content: user}}, tr)
	return text, wait, err
}

// complete makes one model call under the process-wide LLM cap.
func (a *agentCall) complete(ctx context.Context, req llm.Request, deltas *coalescer, callID string, f *usageFrame) (*llm.Response, error) {
	e := a.x.Engine()
	select {
	case e.llmSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.llmSem }()
	var onDelta func(string)
	if deltas != nil {
		onDelta = deltas.add
	}
	resp, err := a.llm.Complete(ctx, req, onDelta, func(attempt int, err error, wait time.Duration) {
		a.x.Emit(EvLLMError, fmt.Sprintf("%v (attempt %d; retrying in %s)", err, attempt, wait.Round(time.Millisecond)),
			map[string]any{"attempt": attempt, "retryInMs": wait.Milliseconds(), "callId": callID})
	})
	if deltas != nil {
		final := ""
		if err == nil {
			final = resp.Text
		}
		deltas.settle(final, err == nil)
	}
	if err == nil {
		a.record(f, a.llm.Model(req.Model), resp.Usage)
	}
	if err != nil && ctx.Err() == nil {
		a.x.Emit(EvLLMError, err.Error(), map[string]any{"callId": callID, "final": true})
	}
	return resp, err
}

// callSubagent runs one subagent call: the child's own tool loop, in a
// session named after the call, so that it too continues from the log
// after a crash.
func (a *agentCall) callSubagent(ctx context.Context, parent, child graph.Node, tc llm.ToolCall, depth int, parentSession string, f *usageFrame) toolOutcome {
	var args struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
		args.Input = tc.Arguments // models sometimes send bare text
	}
	session := parentSession + "/" + tc.ID
	parentCall := ""
	if depth > 0 {
		parentCall = parentSession
	}
	ev := subagentEvent{ParentNodeID: parent.ID, SubagentNodeID: child.ID, SubagentName: child.Data.AgentName,
		CallID: session, ParentCallID: parentCall, Depth: depth + 1, Message: args.Input}
	a.x.Emit(EvSubagentCallStart, ev.String(), nil)
	system := child.Data.SystemPrompt
	if strings.TrimSpace(system) == "" {
		system = DefaultSystemPrompt
	}
	if f == nil {
		f = &a.usage
	}
	frame := &usageFrame{parent: f}
	tr, err := a.transcriptFor(ctx, session)
	var text string
	if err == nil {
		text, _, err = a.run(ctx, child, system, args.Input, depth+1, session, frame, tr)
	}
	if err != nil {
		ev.Message = err.Error()
		a.x.Emit(EvSubagentCallError, ev.String(), a.frameData(frame))
		return toolOutcome{isError: true, text: "error: " + err.Error()}
	}
	ev.Message = text
	a.x.Emit(EvSubagentCallEnd, ev.String(), a.frameData(frame))
	return toolOutcome{text: text}
}

// startPromptData is a start_prompt event's data.
type startPromptData struct {
	Model        string `json:"model"`
	SystemPrompt string `json:"systemPrompt"`
}
