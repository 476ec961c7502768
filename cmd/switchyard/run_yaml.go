package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/yamlflow"
)

// `switchyard run wf.yaml` runs YAML DAG workflows on the same engine,
// store and exit codes as drawn graphs. Folders are configured through the
// environment (read by the engine when the run starts and kept with it):
// SWITCHYARD_SCRIPTS_DIR (named scripts), SWITCHYARD_COMMANDS_DIR (command
// files), SWITCHYARD_DOCS_DIR ($DOCS_DIR), SWITCHYARD_BASE_BRANCH.
func init() {
	yamlStarter = prepareYAML
}

// prepareYAML parses a YAML workflow; errors are printed with their file
// and line (exit 2), warnings are printed and the run goes ahead.
func prepareYAML(file string, raw []byte, stderr io.Writer) (starter, int) {
	if len(raw) > yamlflow.MaxFileSize {
		fmt.Fprintf(stderr, "switchyard: %s: file is larger than %d MiB\n", file, yamlflow.MaxFileSize>>20)
		return nil, exitUsage
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	_, probs, err := engine.ParseYAMLWorkflow(file, raw)
	for _, p := range probs {
		if p.Severity == graph.SeverityWarning {
			fmt.Fprintf(stderr, "warning: %s (%s)\n", p.Message, p.Code)
		}
	}
	if err != nil {
		var inv *engine.InvalidError
		if errors.As(err, &inv) {
			for _, p := range inv.Problems {
				if p.IsError() {
					fmt.Fprintf(stderr, "error: %s (%s)\n", p.Message, p.Code)
				}
			}
			return nil, exitUsage
		}
		fmt.Fprintf(stderr, "switchyard: %s: %v\n", file, err)
		return nil, exitUsage
	}
	return func(ctx context.Context, e *engine.Engine, opt engine.StartOptions) (*engine.Run, error) {
		return e.StartYAML(ctx, abs, raw, opt)
	}, exitOK
}
