package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchyard/switchyard/engine/tools"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/internal/proc"
	"github.com/switchyard/switchyard/llm"
)

// toolPolicy is which built-in tools a node offers and which calls wait
// for a reviewer.
type toolPolicy struct {
	builtins []string
	approve  []graph.ToolPattern // calls that wait for a reviewer; none: never
	deny     []graph.ToolPattern // calls refused (denied_tools' Tool(argument) entries)
	maxTurns int
}

type toolsEnv = tools.Env

// graphToolPolicy reads a drawn agent's tool switches: built-in tools are
// off unless the inspector's checklist turned them on, so graphs made
// before tools existed run exactly as they did.
func graphToolPolicy(n graph.Node) toolPolicy {
	t := n.Data.Tools
	if t == nil {
		return toolPolicy{}
	}
	var p toolPolicy
	for _, name := range t.Builtin {
		if _, ok := tools.Lookup(name); ok {
			p.builtins = append(p.builtins, name)
		}
	}
	for _, s := range t.Approve {
		tp, err := graph.ParseToolPattern(s)
		if err != nil {
			// Validation refuses such a graph; a run stored before it did
			// asks for every call rather than for none.
			tp = graph.ToolPattern{Raw: s, Name: "*"}
		}
		p.approve = append(p.approve, tp)
	}
	return p
}

// builtinTools returns the agent tools for the policy's built-ins.
func (a *agentCall) builtinTools(p toolPolicy) ([]*agentTool, error) {
	if len(p.builtins) == 0 {
		return nil, nil
	}
	out := make([]*agentTool, 0, len(p.builtins))
	for _, name := range p.builtins {
		t, ok := tools.Lookup(name)
		if !ok {
			continue
		}
		at := &agentTool{
			spec: llm.ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()},
			run: func(ctx context.Context, tc llm.ToolCall) toolOutcome {
				env, err := a.toolEnv()
				if err != nil {
					return toolOutcome{isError: true, text: "error: " + err.Error()}
				}
				r := t.Call(ctx, env, json.RawMessage(tc.Arguments))
				return toolOutcome{text: r.Output, isError: r.IsError, cut: r.Cut, full: r.FullSize}
			},
		}
		switch name {
		case "Write", "Edit":
			at.diff = func(args json.RawMessage) string { return a.previewDiff(name, args) }
		}
		out = append(out, at)
	}
	return out, nil
}

// toolEnv is what built-in tools of this node may touch: the run's
// workspace (made on first use) and its $ARTIFACTS_DIR; Bash gets the
// node environment (no server secrets) and records its process group so
// a takeover after a crash can kill what it left.
func (a *agentCall) toolEnv() (*tools.Env, error) {
	var err error
	a.envOnce.Do(func() {
		x := a.x
		ws := x.WorkDir()
		if ws == "" {
			ws = filepath.Join(x.Engine().cfg.WorkspaceRoot, x.RunID())
		}
		if err = os.MkdirAll(ws, 0o755); err != nil {
			err = fmt.Errorf("create the run's workspace: %w", err)
			return
		}
		var art string
		if art, err = x.ArtifactsDir(); err != nil {
			return
		}
		var pass []string
		if spec, ok := x.Spec().(*yamlSpec); ok {
			pass = spec.rs.wf.PassEnv
		}
		env := append(inheritedEnv(pass), "ARTIFACTS_DIR="+art, "WORKFLOW_ID="+x.RunID())
		a.env = &tools.Env{
			Roots:   []string{ws, art},
			ProcEnv: env,
			RunProc: func(ctx context.Context, ps proc.Spec) (string, string, error) { return runProc(ctx, x, ps) },
		}
	})
	if err != nil {
		return nil, err
	}
	if a.env == nil {
		return nil, fmt.Errorf("the run's workspace is not available")
	}
	return a.env, nil
}

// previewDiff shows a reviewer what a Write or Edit call would change.
func (a *agentCall) previewDiff(tool string, args json.RawMessage) string {
	var in struct {
		FilePath   string `json:"file_path"`
		Content    string `json:"content"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if json.Unmarshal(args, &in) != nil || in.FilePath == "" {
		return ""
	}
	env, err := a.toolEnv()
	if err != nil {
		return ""
	}
	var before string
	if b, err := tools.ReadFile(env, in.FilePath); err == nil {
		before = string(b)
	}
	after := in.Content
	if tool == "Edit" {
		if in.OldString == "" || !strings.Contains(before, in.OldString) {
			return ""
		}
		if in.ReplaceAll {
			after = strings.ReplaceAll(before, in.OldString, in.NewString)
		} else {
			after = strings.Replace(before, in.OldString, in.NewString, 1)
		}
	}
	return unifiedDiff(in.FilePath, before, after)
}

// resumeTranscript rebuilds session from the log and, for a reviewer's
// decision, records it against the call it answers (once: a decision
// re-applied after a crash finds it logged).
func (a *agentCall) resumeTranscript(ctx context.Context, session string, d *Decision) (*transcript, error) {
	tr, err := a.transcriptFor(ctx, session)
	if err != nil || d == nil || tr == nil || tr.pending == nil {
		return tr, err
	}
	p := tr.pending
	for _, tc := range p.calls {
		if d.CallID != "" && tc.ID != d.CallID {
			continue
		}
		if _, done := p.results[tc.ID]; done {
			continue
		}
		if _, decided := p.decisions[tc.ID]; decided {
			if d.CallID != "" {
				break // logged before a crash
			}
			continue
		}
		dec := *d
		dec.CallID = tc.ID
		verb := "Approved"
		if dec.Decision != "approve" {
			verb = "Rejected"
		}
		msg := verb + " " + toolSummary(tc.Name, tc.Arguments)
		if strings.TrimSpace(dec.Note) != "" {
			msg += ": " + dec.Note
		}
		a.x.Emit(EvInputReceived, msg, map[string]any{"decision": dec.Decision, "note": dec.Note,
			"callId": tc.ID, "tool": tc.Name, "session": session})
		p.decisions[tc.ID] = dec
		break
	}
	return tr, nil
}
