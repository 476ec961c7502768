package engine

import (
	"context"

	"github.com/switchyard/switchyard/graph"
)

type startExec struct{}

func (startExec) inline() {}

func (startExec) pure() {}

func (startExec) Execute(_ context.Context, x *Exec) (Result, error) {
	if in := x.RunInput(); in != "" {
		return Result{Output: in}, nil
	}
	n := x.Spec().(graph.Node)
	return Result{Output: n.Data.InitialInput}, nil
}
