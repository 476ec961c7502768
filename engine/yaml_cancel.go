package engine

import (
	"context"
	"fmt"
	"strings"
)

// yamlCancelExec runs a cancel node: it ends the run as cancelled.
type yamlCancelExec struct{}

func (yamlCancelExec) Execute(ctx context.Context, x *Exec) (Result, error) {
	return runYAML(ctx, x, func(_ context.Context, spec *yamlSpec) (Result, error) { return runCancelNode(x, spec) })
}

// runCancelNode ends the run as cancelled with the node's reason.
func runCancelNode(x *Exec, spec *yamlSpec) (Result, error) {
	vars := &yamlVars{x: x, spec: spec, mode: modePrompt}
	reason, err := vars.substitute(spec.n.CancelReason, nil)
	if err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(reason) == "" {
		reason = fmt.Sprintf("cancelled by node %q", spec.n.ID)
	}
	return Result{Output: reason, CancelRun: reason}, nil
}
