package engine

import (
	"fmt"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/yamlflow"
)

// This file is the one place node kinds and workflow kinds are registered.
// Drawn graphs: node_start.go, node_if.go, node_approval.go, node_agent.go
// (plans: graph_plan.go). YAML workflows: yaml_prompt.go (command and
// prompt), yaml_bash.go, yaml_script.go, yaml_loop.go, yaml_approval.go and
// yaml_cancel.go, each wrapped by yaml_exec.go's shared steps (plans:
// yaml_plan.go).

// yamlTypePrefix keys YAML node executors apart from drawn-graph ones.
const yamlTypePrefix = "yaml."

// defaultExecutors maps every node type key to its executor.
func defaultExecutors() map[string]Executor {
	m := map[string]Executor{
		graph.TypeStart:    startExec{},
		graph.TypeIf:       ifExec{},
		graph.TypeApproval: approvalExec{},
		graph.TypeAgent:    agentExec{},
	}
	for k, x := range map[yamlflow.Kind]Executor{
		yamlflow.KindCommand: yamlPromptExec{}, yamlflow.KindPrompt: yamlPromptExec{},
		yamlflow.KindBash: yamlBashExec{}, yamlflow.KindScript: yamlScriptExec{},
		yamlflow.KindLoop: yamlLoopExec{}, yamlflow.KindApproval: yamlApprovalExec{},
		yamlflow.KindCancel: yamlCancelExec{},
	} {
		m[yamlTypePrefix+string(k)] = x
	}
	return m
}

// planFor rebuilds a run's plan from its definition snapshot, by workflow
// kind.
func (e *Engine) planFor(run *Run) (*plan, error) {
	switch run.Kind {
	case KindGraph:
		return compileGraphRun(e, run)
	case KindYAML:
		return compileYAMLRun(e, run)
	}
	return nil, fmt.Errorf("run %s: unknown workflow kind %q", run.ID, run.Kind)
}

// seedFor is how a run of a workflow kind begins: a drawn graph's start
// nodes are queued with the input; a YAML DAG's dependency-free nodes are
// notified, so their join policy (`when:`) applies to them too.
func seedFor(kind, input string) func(r *runner, root int) {
	if kind == KindYAML {
		return (*runner).notify
	}
	return func(r *runner, i int) { r.enqueue(i, input, "") }
}

// onLoad lets a workflow kind adjust persisted node states before a run
// continues (e.g. YAML always_run nodes run again on resume).
func onLoad(p *plan, run *Run, states []*NodeState) {
	if run.Kind == KindYAML {
		yamlOnLoad(p, run, states)
	}
}
