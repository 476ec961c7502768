package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/server"
	"github.com/switchyard/switchyard/store"
)

// startStoreUpkeep starts what serve does to its store in the background:
// naming the YAML runs stored without their workflow id (before the store
// kept it, or started by `switchyard run`), which only serve can do as
// only it knows its workflows folder; and retention (--keep-runs,
// --keep-runs-count), whose counts /metrics shows
// (switchyard_store_pruned_runs_total, _events_total). stop ends both and
// waits.
func startStoreUpkeep(ctx context.Context, st runStore, src server.WorkflowSource, keep store.Retention,
	reg prometheus.Registerer, logger *slog.Logger) (stop func()) {
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
	var ret *store.Retainer
	if keep.On() {
		ret = store.StartRetention(ctx, st, keep, 0, logger)
		logger.Info("retention: deleting finished runs in the background", "keep_for", keep.KeepFor, "keep_count", keep.KeepCount)
	}
	pruned := func(f func(store.RetentionStats) uint64) func() float64 {
		return func() float64 {
			if ret == nil {
				return 0
			}
			return float64(f(ret.Stats()))
		}
	}
	if reg != nil {
		reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "switchyard_store_pruned_runs_total", Help: "Finished runs deleted by retention (--keep-runs, --keep-runs-count).",
			}, pruned(func(s store.RetentionStats) uint64 { return uint64(s.Runs) })),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "switchyard_store_pruned_events_total", Help: "Events of the runs retention deleted.",
			}, pruned(func(s store.RetentionStats) uint64 { return uint64(s.Events) })),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "switchyard_store_pruned_bytes_total", Help: "Bytes the SQLite file shrank by after retention deleted runs.",
			}, pruned(func(s store.RetentionStats) uint64 { return uint64(s.FreedBytes) })),
		)
	}
	return func() {
		cancel()
		if ret != nil {
			ret.Stop()
		}
		wg.Wait()
	}
}
