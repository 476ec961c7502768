package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchyard/switchyard/yamlflow"
)

// approvalState is an approval node's private state while it waits.
type approvalState struct {
	Rejections int    `json:"rejections"`
	LastRework string `json:"lastRework,omitempty"`
}

// yamlApprovalExec runs an approval node: it waits for a human; Resume
// continues it (an on_reject rework, or the decision's branch).
type yamlApprovalExec struct{}

func (yamlApprovalExec) Execute(ctx context.Context, x *Exec) (Result, error) {
	return runYAML(ctx, x, func(ctx context.Context, spec *yamlSpec) (Result, error) {
		return approvalWait(x, spec, approvalState{})
	})
}

func (yamlApprovalExec) Resume(ctx context.Context, x *Exec, d Decision) (Result, error) {
	return resumeYAML(ctx, x, func(ctx context.Context, spec *yamlSpec) (Result, error) { return approvalResume(ctx, x, spec, d) })
}

func approvalWait(x *Exec, spec *yamlSpec, st approvalState) (Result, error) {
	vars := &yamlVars{x: x, spec: spec, mode: modePrompt}
	msg, err := vars.substitute(spec.n.Approval.Message, nil)
	if err != nil {
		return Result{}, permanent(err)
	}
	raw, _ := json.Marshal(st)
	return Result{Wait: &Wait{Prompt: msg, State: raw}}, nil
}

// approvalResume applies a reviewer's decision. Approve continues (output:
// the reviewer's note with capture_response, else ""). Reject runs the
// on_reject prompt with $REJECTION_REASON and asks again; the
// max_attempts-th rejection, or any rejection without on_reject, cancels
// the run with the reviewer's reason.
func approvalResume(ctx context.Context, x *Exec, spec *yamlSpec, d Decision) (Result, error) {
	var st approvalState
	if len(x.WaitState) > 0 {
		_ = json.Unmarshal(x.WaitState, &st)
	}
	ap := spec.n.Approval
	if d.Decision == "approve" {
		x.Emit(EvInputReceived, "User approved this step.", d)
		out := ""
		if ap.CaptureResponse {
			out = d.Note
		}
		return Result{Output: out, Decided: true}, nil
	}
	x.Emit(EvInputReceived, "User rejected this step. Feedback: "+d.Note, d)
	st.Rejections++
	reason := strings.TrimSpace(d.Note)
	if reason == "" {
		reason = "no reason given"
	}
	if ap.OnReject == nil {
		return Result{Decided: true, Rejection: d.Note,
			CancelRun: fmt.Sprintf("approval %q rejected: %s", spec.n.ID, reason)}, nil
	}
	maxAttempts := ap.OnReject.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = yamlflow.DefaultOnRejectMaxAttempts
	}
	if st.Rejections >= maxAttempts {
		return Result{Decided: true, Rejection: d.Note,
			CancelRun: fmt.Sprintf("approval %q rejected %d times (max_attempts %d): %s", spec.n.ID, st.Rejections, maxAttempts, reason)}, nil
	}
	res, err := withRetry(ctx, x, spec.n, func(ctx context.Context) (Result, error) {
		vars := &yamlVars{x: x, spec: spec, mode: modePrompt, rejection: d.Note}
		user, err := vars.substitute(ap.OnReject.Prompt, nil)
		if err != nil {
			return Result{}, permanent(err)
		}
		// The rework runs with the node's tools; its calls never wait for
		// a reviewer (the approval itself is the review).
		out, _, err := llmTurn(ctx, x, spec, vars, nil, user, map[string]any{"onReject": st.Rejections},
			turnOpts{session: fmt.Sprintf("v%d/r%d", x.Visit, st.Rejections), continuing: true, noApprovals: true})
		return Result{Output: out}, err
	})
	if err != nil {
		return Result{}, fmt.Errorf("on_reject prompt: %w", err)
	}
	st.LastRework = res.Output
	return approvalWait(x, spec, st)
}
