package engine

import (
	"fmt"
	"strings"
)

// ---- cancel and approval nodes ----
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
