package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/yamlflow"
)

// validateYAMLFile loads a YAML DAG workflow and returns every problem the
// loader found. err is non-nil only when the file cannot be read; a YAML
// syntax error is a problem with code yaml_syntax. Each message starts with
// "<file>:<line>:" and names the node, so it can be printed as is.
func validateYAMLFile(path string) ([]graph.Problem, error) {
	// The caller names the file in read errors, so they carry only the cause.
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", pathCause(err))
	}
	defer f.Close()
	// One byte past the limit lets the loader report an oversized file.
	data, err := io.ReadAll(io.LimitReader(f, yamlflow.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", pathCause(err))
	}
	// include: nodes name workflows beside the file.
	wf, diags, _ := yamlflow.Parse(path, data, yamlflow.WithIncludeDir(filepath.Dir(path))) // the diagnostics hold every error
	problems := yamlflow.Problems(diags)
	if wf != nil {
		problems = append(problems, providerWarnings(path, wf)...)
	}
	return problems, nil
}

// providerWarnings warns of AI nodes that would go to Claude while this
// environment has no ANTHROPIC_API_KEY: the file is valid, but it would
// not run here.
func providerWarnings(path string, wf *yamlflow.Workflow) []graph.Problem {
	if _, ok := llm.ClaudeConfigFromEnv(); ok {
		return nil
	}
	var out []graph.Problem
	for _, n := range wf.Nodes {
		if n.IsAI() && yamlflow.ProviderFor(wf, n) == yamlflow.ProviderClaude {
			out = append(out, graph.Problem{Code: "provider_not_configured", Severity: graph.SeverityWarning, NodeID: n.ID, Line: n.Line,
				Message: fmt.Sprintf("%s:%d: node %q: provider claude is not configured: set ANTHROPIC_API_KEY to run it", path, n.Line, n.ID)})
		}
	}
	return out
}

// pathCause drops the path an *fs.PathError repeats.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
