package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/switchyard/switchyard/graph"
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
	_, diags, _ := yamlflow.Parse(path, data) // the diagnostics hold every error
	problems := make([]graph.Problem, 0, len(diags))
	for _, d := range diags {
		sev := graph.SeverityWarning
		if d.IsError() {
			sev = graph.SeverityError
		}
		problems = append(problems, graph.Problem{
			Code:     d.Code,
			Severity: sev,
			Message:  d.Error(),
			NodeID:   d.NodeID,
		})
	}
	return problems, nil
}

// pathCause drops the path an *fs.PathError repeats.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
