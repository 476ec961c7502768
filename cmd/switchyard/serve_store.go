package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/switchyard/switchyard/server"
)

// startStoreUpkeep starts what serve does to its store in the background:
// naming the YAML runs stored without their workflow id (before the store
// kept it, or started by `switchyard run`), which only serve can do as
// only it knows its workflows folder. stop ends it and waits.
func startStoreUpkeep(ctx context.Context, st runStore, src server.WorkflowSource, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if namer, ok := src.(server.RunWorkflowNamer); ok {
		wg.Go(func() {
			n, err := st.NameRuns(ctx, namer.WorkflowIDOfRun, 0)
			switch {
			case err != nil && ctx.Err() == nil:
				logger.Warn("naming the workflows of earlier YAML runs", "err", err, "runs", n)
			case n > 0:
				logger.Info("named the workflows of earlier YAML runs", "runs", n)
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
