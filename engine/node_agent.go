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

// maxAgentTurns bounds model turns in one agent invocation.
const maxAgentTurns = 20

type agentExec struct{}

func (agentExec) Execute(ctx context.Context, x *Exec) (Result, error) {
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
	x.Emit(EvStartPrompt, user, startPromptData{Model: client.Model(n.Data.Model), SystemPrompt: system})
	a := &agentCall{x: x, llm: client, subagents: x.r.plan.subagents}
	text, err := a.run(ctx, n, system, user, 0, "", nil)
	if err != nil {
		return Result{}, err
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

// agentCall runs one agent invocation with its subagent tools.
type agentCall struct {
	x         *Exec
	llm       *llm.Client
	subagents map[string][]graph.Node
	callSeq   int64
	usage     usageFrame // every model call of this invocation, subagents' included
	mu        sync.Mutex // guards callSeq and the usage frames
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

func (a *agentCall) nextCallID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.callSeq++
	return fmt.Sprintf("%s-call-%d", a.x.NodeID(), a.callSeq)
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

// run drives the model/tool loop for node n at the given depth (0 = the
// node itself) and returns the final text. Its model calls count in f
// (nil: the invocation's own frame).
func (a *agentCall) run(ctx context.Context, n graph.Node, system, user string, depth int, callID string, f *usageFrame) (string, error) {
	children := a.subagents[n.ID]
	if !n.SubagentsEnabled() {
		children = nil
	}
	byName := make(map[string]graph.Node, len(children))
	var tools []llm.ToolSpec
	for _, c := range children {
		name := SubagentToolName(c)
		byName[name] = c
		desc := c.Data.SystemPrompt
		if desc == "" {
			desc = "Ask the " + c.Data.AgentName + " agent."
		}
		tools = append(tools, llm.ToolSpec{Name: name, Description: desc, Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"input": map[string]any{"type": "string", "description": "What to ask the agent."}},
			"required":   []string{"input"},
		}})
	}
	msgs := []llm.Message{{Role: "system", Content: system}, {Role: "user", Content: user}}
	var deltas *coalescer
	if depth == 0 {
		deltas = newCoalescer(a.x)
	}
	for turn := 0; turn < maxAgentTurns; turn++ {
		resp, err := a.complete(ctx, llm.Request{
			Model: n.Data.Model, Effort: n.Data.ReasoningEffort, Messages: msgs,
			Tools: tools, WebSearch: n.WebSearchEnabled(),
		}, deltas, callID, f)
		if err != nil {
			return "", err
		}
		if len(resp.ToolCalls) == 0 {
			return resp.Text, nil
		}
		msgs = append(msgs, llm.Message{Role: "assistant", Content: resp.Text, ToolCalls: resp.ToolCalls})
		results := make([]string, len(resp.ToolCalls))
		var wg sync.WaitGroup
		for k, tc := range resp.ToolCalls {
			wg.Add(1)
			go func() { // tool calls of one response run concurrently
				defer wg.Done()
				results[k] = a.callTool(ctx, n, byName, tc, depth, callID, f)
			}()
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return "", err
		}
		for k, tc := range resp.ToolCalls {
			msgs = append(msgs, llm.Message{Role: "tool", ToolCallID: tc.ID, Content: results[k]})
		}
	}
	return "", fmt.Errorf("agent %q made %d model turns without a final answer", n.ID, maxAgentTurns)
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
		deltas.flush()
	}
	if err == nil {
		a.record(f, a.llm.Model(req.Model), resp.Usage)
	}
	if err != nil && ctx.Err() == nil {
		a.x.Emit(EvLLMError, err.Error(), map[string]any{"callId": callID, "final": true})
	}
	return resp, err
}

// callTool runs one subagent tool call and returns the tool result text.
func (a *agentCall) callTool(ctx context.Context, parent graph.Node, byName map[string]graph.Node, tc llm.ToolCall, depth int, parentCallID string, f *usageFrame) string {
	child, ok := byName[tc.Name]
	if !ok {
		return fmt.Sprintf("error: no tool named %q", tc.Name)
	}
	var args struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
		args.Input = tc.Arguments // models sometimes send bare text
	}
	ev := subagentEvent{ParentNodeID: parent.ID, SubagentNodeID: child.ID, SubagentName: child.Data.AgentName,
		CallID: a.nextCallID(), ParentCallID: parentCallID, Depth: depth + 1, Message: args.Input}
	a.x.Emit(EvSubagentCallStart, ev.String(), nil)
	system := child.Data.SystemPrompt
	if strings.TrimSpace(system) == "" {
		system = DefaultSystemPrompt
	}
	if f == nil {
		f = &a.usage
	}
	frame := &usageFrame{parent: f}
	text, err := a.run(ctx, child, system, args.Input, depth+1, ev.CallID, frame)
	if err != nil {
		ev.Message = err.Error()
		a.x.Emit(EvSubagentCallError, ev.String(), a.frameData(frame))
		return "error: " + err.Error()
	}
	ev.Message = text
	a.x.Emit(EvSubagentCallEnd, ev.String(), a.frameData(frame))
	return text
}

// startPromptData is a start_prompt event's data.
type startPromptData struct {
	Model        string `json:"model"`
	SystemPrompt string `json:"systemPrompt"`
}
