package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/sqlite"
)

var pruneKeep = flag.Int("prune-keep", 0, "at the end, prune all finished runs but this many, as serve --keep-runs-count does, and measure")

// The store before retention has no PruneRuns: this file is the after's.
func init() {
	pruneThenMeasure = func(f *filler) error {
		if *pruneKeep <= 0 {
			return nil
		}
		ctx := context.Background()
		st, err := sqlite.Open(ctx, f.dbPath())
		if err != nil {
			return err
		}
		p := store.Retention{KeepCount: *pruneKeep}.Prune(time.Now())
		p.Pause = 5 * time.Millisecond // as serve's background retention
		start := time.Now()
		got, err := st.PruneRuns(ctx, p)
		took := time.Since(start)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "pruned %d runs, %d events, %d definitions in %s (%.0f runs/s); the file shrank by %d bytes\n",
			got.Runs, got.Events, got.Definitions, took.Round(time.Millisecond), float64(got.Runs)/took.Seconds(), got.FreedBytes)
		f.fillRate = 0
		return f.measure(*pruneKeep)
	}
}
