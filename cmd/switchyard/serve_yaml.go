package main

import (
	"log/slog"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/server"
)

// `switchyard serve --workflows DIR` lists the YAML workflows of DIR
// (default .switchyard/workflows) beside the drawn ones and runs them in
// the server's working directory. Folders for named scripts and command
// files come from the environment, as for `switchyard run`
// (SWITCHYARD_SCRIPTS_DIR, SWITCHYARD_COMMANDS_DIR, ...). An empty DIR
// (--workflows "") lists none.
func init() {
	workflowSourceFor = yamlWorkflowSource
}

func yamlWorkflowSource(dir string, logger *slog.Logger, e *engine.Engine) (server.WorkflowSource, error) {
	if dir == "" {
		return nil, nil
	}
	src, err := server.NewYAMLWorkflows(dir, server.YAMLOptions{Logger: logger, Blocker: e.ProviderBlocker})
	if err != nil {
		return nil, err
	}
	logger.Info("yaml workflows", "dir", src.Dir())
	return src, nil
}
