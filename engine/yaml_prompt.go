package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/yamlflow"
)

// ErrProviderUnsupported is a node naming a provider Switchyard does not ship.
var ErrProviderUnsupported = errors.New("provider is not supported")

// ---- prompt and command nodes ----

// yamlPromptExec runs prompt and command nodes (a command's text comes
// from its file): one tool loop; Resume answers a tool call that waited
// for a reviewer.
type yamlPromptExec struct{}

func (yamlPromptExec) Execute(ctx context.Context, x *Exec) (Result, error) {
	return runYAML(ctx, x, func(ctx context.Context, spec *yamlSpec) (Result, error) {
		tries := 0
		return withRetry(ctx, x, spec.n, func(ctx context.Context) (Result, error) {
			tries++
			return runPromptNode(ctx, x, spec, nil, tries > 1)
		})
	})
}

func (yamlPromptExec) Resume(ctx context.Context, x *Exec, d Decision) (Result, error) {
	return resumeYAML(ctx, x, func(ctx context.Context, spec *yamlSpec) (Result, error) {
		return withRetry(ctx, x, spec.n, func(ctx context.Context) (Result, error) { return runPromptNode(ctx, x, spec, &d, true) })
	})
}

func runPromptNode(ctx context.Context, x *Exec, spec *yamlSpec, d *Decision, retry bool) (Result, error) {
	n := spec.n
	text := n.Prompt
	if n.Kind == yamlflow.KindCommand {
		var err error
		if text, err = loadCommand(spec.rs, x.WorkDir(), n.Command); err != nil {
			return Result{}, err
		}
		// A command file of an included block names its block-mates by
		// their ids in the block: rename them as the loader did the rest.
		text = n.RewriteOutputRefs(text)
	}
	vars := &yamlVars{x: x, spec: spec, mode: modePrompt}
	user, err := vars.substitute(text, nil)
	if err != nil {
		return Result{}, permanent(err)
	}
	out, wait, err := llmTurn(ctx, x, spec, vars, contextFor(x, spec), user, nil, turnOpts{session: fmt.Sprintf("v%d", x.Visit), decision: d, continuing: retry})
	if err != nil {
		return Result{}, err
	}
	if wait != nil {
		return Result{Wait: wait}, nil
	}
	return Result{Output: out}, nil
}

// contextFor returns the conversation a node continues: with context
// shared, that of its single dependency when it is an AI node whose
// conversation this process holds; otherwise none (a fresh conversation).
func contextFor(x *Exec, spec *yamlSpec) []llm.Message {
	n := spec.n
	if n.Context != yamlflow.ContextShared {
		return nil
	}
	if len(n.DependsOn) != 1 {
		x.Emit(EvWarning, fmt.Sprintf("context: shared needs exactly one dependency to continue; %q has %d: starting a fresh conversation",
			n.ID, len(n.DependsOn)), nil)
		return nil
	}
	dep := n.DependsOn[0]
	rs := spec.rs
	rs.mu.Lock()
	h, ok := rs.histories[dep]
	rs.mu.Unlock()
	if !ok {
		why := "it holds no conversation"
		if d := rs.wf.Node(dep); d != nil && d.IsAI() {
			why = "its conversation is not in memory (the run was continued in another process)"
		}
		x.Emit(EvWarning, fmt.Sprintf("context: shared cannot continue %q: %s; starting a fresh conversation", dep, why), nil)
		return nil
	}
	return append([]llm.Message(nil), h...)
}

// resolveProvider picks the client and model of an AI node: the default
// (OpenAI-compatible) provider, or Claude through Anthropic's
// OpenAI-compatible endpoint (model aliases mapped); other providers are
// refused.
func resolveProvider(x *Exec, spec *yamlSpec) (*llm.Client, string, error) {
	model := spec.n.Model
	if model == "" {
		model = spec.rs.wf.Model
	}
	switch p := yamlflow.ProviderFor(spec.rs.wf, spec.n); p {
	case "", yamlflow.ProviderOpenAI:
		client, err := x.Engine().LLM()
		if err != nil {
			return nil, "", permanent(err)
		}
		return client, model, nil
	case yamlflow.ProviderClaude:
		client, err := x.Engine().Claude()
		if err != nil {
			return nil, "", permanent(err)
		}
		return client, yamlflow.ClaudeModel(model), nil
	default:
		return nil, "", permanent(&providerError{p})
	}
}

// ProviderBlocker is why wf cannot run here, or nil: an AI node whose
// provider Switchyard does not ship (ErrProviderUnsupported), or whose
// provider is claude while no Anthropic key is configured (ErrNoClaude).
// Nodes of the default provider are not checked: without an LLM they fail
// when they run, as drawn agents do.
func (e *Engine) ProviderBlocker(wf *yamlflow.Workflow) error {
	for _, n := range wf.Nodes {
		if !n.IsAI() {
			continue
		}
		switch p := yamlflow.ProviderFor(wf, n); {
		case !yamlflow.Shipped(p):
			return fmt.Errorf("node %q: %w", n.ID, &providerError{p})
		case p == yamlflow.ProviderClaude && !e.HasProvider(p):
			return fmt.Errorf("node %q: %w", n.ID, ErrNoClaude)
		}
	}
	return nil
}

// providerError names a provider Switchyard does not ship; it matches
// ErrProviderUnsupported.
type providerError struct{ provider string }

func (e *providerError) Error() string {
	return fmt.Sprintf("provider %q is not supported; Switchyard ships the OpenAI-compatible provider and claude", e.provider)
}

func (e *providerError) Is(target error) bool { return target == ErrProviderUnsupported }

// turnOpts says which tool loop an llmTurn is: its session in the log
// (one per visit, or per loop iteration), and the reviewer's decision it
// resumes with, if any.
type turnOpts struct {
	session  string
	decision *Decision
	// continuing is set when the node may have logged this session before
	// (a retry, a restart, a decision).
	continuing bool
	// noApprovals runs every call without asking (approve_tools do not
	// apply: an approval node's rework).
	noApprovals bool
}

// llmTurn sends one user message (after history, if any) and runs the tool
// loop until the model answers; the answer is validated against
// output_format when the node has one. The conversation is kept for nodes
// that continue it (context: shared). A tool call that needs a reviewer
// returns a Wait instead.
func llmTurn(ctx context.Context, x *Exec, spec *yamlSpec, vars *yamlVars, history []llm.Message, user string, data map[string]any, o turnOpts) (string, *Wait, error) {
	n := spec.n
	client, model, err := resolveProvider(x, spec)
	if err != nil {
		return "", nil, err
	}
	msgs := history
	var skillWarnings []string
	if len(msgs) == 0 {
		system := DefaultSystemPrompt
		if strings.TrimSpace(n.SystemPrompt) != "" {
			if system, err = vars.substitute(n.SystemPrompt, nil); err != nil {
				return "", nil, permanent(err)
			}
		}
		var skills string
		skills, skillWarnings = loadSkills(x.WorkDir(), n.Skills)
		msgs = []llm.Message{{Role: "system", Content: system + skills}}
	}
	msgs = append(msgs, llm.Message{Role: "user", Content: user})
	a := &agentCall{x: x, llm: client, continuing: o.continuing || o.decision != nil || x.Attempt > 1}
	tr, err := a.resumeTranscript(ctx, o.session, o.decision)
	if err != nil {
		return "", nil, err
	}
	if tr == nil || (tr.turns == 0 && tr.pending == nil) {
		for _, w := range skillWarnings {
			x.Emit(EvWarning, w, nil)
		}
		ev := map[string]any{"systemPrompt": msgs[0].Content, "model": client.Model(model)}
		for k, v := range data {
			ev[k] = v
		}
		x.Emit(EvStartPrompt, user, ev)
	} else {
		a.restoreUsage(tr)
	}
	if n.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(n.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	pol := yamlToolPolicy(spec)
	if o.noApprovals {
		pol.approve = nil
	}
	tools, err := a.builtinTools(pol)
	if err != nil {
		return "", nil, err
	}
	mt, err := a.yamlMCPTools(ctx, spec)
	if err != nil {
		return "", nil, permanent(err)
	}
	tools = append(tools, mt...)
	l := newToolLoop(a, o.session, llm.Request{Model: model, Effort: n.Effort, Schema: n.OutputFormat,
		IdleTimeout: time.Duration(n.IdleTimeoutMS) * time.Millisecond}, tools, pol.maxTurns)
	l.deltas = newCoalescer(x)
	l.approve = pol.approve
	l.deny = pol.deny
	l.hooks = n.Hooks
	text, msgs, wait, err := l.run(ctx, msgs, tr)
	if err != nil || wait != nil {
		return "", wait, err
	}
	// data also went to start_prompt: the response's own keys go in a copy.
	rd := make(map[string]any, len(data)+2)
	for k, v := range data {
		rd[k] = v
	}
	d := a.responseData(client.Model(model))
	rd["model"] = d.Model
	if d.Usage != nil {
		rd["usage"] = d.Usage
	}
	x.Emit(EvLLMResponse, text, rd)
	if n.OutputFormat != nil {
		if text, err = validateOutput(n, text); err != nil {
			return "", nil, err
		}
	}
	spec.rs.mu.Lock()
	spec.rs.histories[n.ID] = msgs
	spec.rs.mu.Unlock()
	return text, nil, nil
}

// ErrOutputFormat is wrapped by structured outputs that do not match the
// node's output_format.
var ErrOutputFormat = errors.New("output does not match output_format")

// validateOutput checks a structured answer against the node's schema and
// returns it without a Markdown fence.
func validateOutput(n *yamlflow.Node, text string) (string, error) {
	clean := strings.TrimSpace(stripFence(text))
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(clean))
	if err != nil {
		return "", fmt.Errorf("%w: not JSON: %v", ErrOutputFormat, err)
	}
	schema := n.OutputSchema()
	if schema == nil {
		if schema, err = yamlflow.CompileOutputFormat(n.OutputFormat); err != nil {
			return "", permanent(fmt.Errorf("output_format: %w", err))
		}
	}
	if err := schema.Validate(v); err != nil {
		return "", fmt.Errorf("%w: %v", ErrOutputFormat, err)
	}
	return clean, nil
}

// loadCommand reads a command file: .switchyard/commands/ in the working
// directory, then the configured folder, then ~/.switchyard/commands/.
func loadCommand(rs *yamlRunState, workDir, name string) (string, error) {
	if err := yamlflow.ValidCommandName(name); err != nil {
		return "", permanent(err)
	}
	var dirs []string
	if workDir != "" {
		dirs = append(dirs, filepath.Join(workDir, ".switchyard", "commands"))
	}
	if rs.cfg.CommandsDir != "" {
		dirs = append(dirs, rs.cfg.CommandsDir)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".switchyard", "commands"))
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, name+".md"))
		if err == nil {
			return stripFrontMatter(string(b)), nil
		}
	}
	return "", permanent(fmt.Errorf("command %q not found: looked for %s.md in %s (set %s for another folder)",
		name, name, strings.Join(dirs, ", "), EnvCommandsDir))
}

// stripFrontMatter removes a leading ---\n...\n--- block.
func stripFrontMatter(s string) string {
	t := strings.TrimPrefix(s, "\ufeff")
	if !strings.HasPrefix(t, "---\n") && !strings.HasPrefix(t, "---\r\n") {
		return s
	}
	rest := t[strings.IndexByte(t, '\n')+1:]
	for off := 0; off < len(rest); {
		end := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if end >= 0 {
			line = rest[off : off+end]
		}
		if strings.TrimRight(line, "\r \t") == "---" {
			if end < 0 {
				return ""
			}
			return strings.TrimLeft(rest[off+end+1:], "\r\n")
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	return s // no closing line: not front matter
}
