package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchyard/switchyard/graph"
)

type ifExec struct{}

func (ifExec) inline() {}

func (ifExec) pure() {}

func (ifExec) Execute(_ context.Context, x *Exec) (Result, error) {
	n := x.Spec().(graph.Node)
	subject := strings.ToLower(x.Input)
	for i, c := range n.Data.Conditions {
		v := strings.ToLower(strings.TrimSpace(c.Value))
		var match bool
		if v != "" {
			switch c.Operator {
			case graph.OpContains:
				match = strings.Contains(subject, v)
			default:
				match = subject == v
			}
		}
		op := c.Operator
		if op == "" {
			op = graph.OpEqual
		}
		x.Emit(EvLogicCheck, fmt.Sprintf("Condition %d (%s %q) evaluated as %t", i+1, op, c.Value, match),
			map[string]any{"index": i, "operator": op, "value": c.Value, "result": match})
		if match {
			return Result{Output: x.Input, Handle: fmt.Sprintf("%s%d", graph.HandleConditionPrefix, i)}, nil
		}
	}
	return Result{Output: x.Input, Handle: graph.HandleFalse}, nil
}
