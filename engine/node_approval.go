package engine

import (
	"context"
	"strings"

	"github.com/switchyard/switchyard/graph"
)

type approvalExec struct{}

func (approvalExec) inline() {}

func (approvalExec) Execute(_ context.Context, x *Exec) (Result, error) {
	n := x.Spec().(graph.Node)
	prompt := n.Data.Prompt
	if strings.TrimSpace(prompt) == "" {
		prompt = "Waiting for user approval"
	}
	return Result{Wait: &Wait{Prompt: prompt}}, nil
}

func (approvalExec) Resume(_ context.Context, x *Exec, d Decision) (Result, error) {
	if d.Decision == graph.HandleApprove {
		x.Emit(EvInputReceived, "User approved this step.", d)
		return Result{Output: x.Input, Handle: graph.HandleApprove, Decided: true}, nil
	}
	x.Emit(EvInputReceived, "User rejected this step. Feedback: "+d.Note, d)
	return Result{Output: x.Input, Handle: graph.HandleReject, Decided: true, Rejection: d.Note}, nil
}
