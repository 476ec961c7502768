package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/memory"
)

// TestRetainerPrunesInTheBackground: a Retainer applies its policy at
// once and counts what it pruned; paused runs stay, however old.
func TestRetainerPrunesInTheBackground(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	old := now.Add(-40 * 24 * time.Hour)
	for i, status := range []engine.RunStatus{engine.StatusCompleted, engine.StatusFailed, engine.StatusPaused} {
		r := &engine.Run{ID: fmt.Sprintf("run-%d", i), Kind: engine.KindGraph, Status: status, CreatedAt: old, UpdatedAt: old}
		if status.Terminal() {
			r.FinishedAt = &old
		}
		if err := st.CreateRun(ctx, r, nil, []*engine.Event{{Seq: 1, Type: engine.EvOutput, Timestamp: old}}); err != nil {
			t.Fatal(err)
		}
	}
	r := store.StartRetention(ctx, st, store.Retention{KeepFor: 30 * 24 * time.Hour}, time.Hour, nil)
	deadline := time.Now().Add(30 * time.Second)
	for r.Stats().Passes == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no retention pass in 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.Stop()
	if s := r.Stats(); s.Runs != 2 || s.Events != 2 || s.Errors != 0 {
		t.Fatalf("retention stats %+v, want 2 runs and 2 events pruned", s)
	}
	if _, err := st.GetRun(ctx, "run-2"); err != nil {
		t.Fatalf("the paused run: %v", err)
	}
}

func TestRetentionPolicy(t *testing.T) {
	now := time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		r    store.Retention
		on   bool
		want store.Prune
	}{
		{store.Retention{}, false, store.Prune{Settled: now.Add(-time.Minute)}},
		{store.Retention{KeepFor: 30 * 24 * time.Hour}, true, store.Prune{Before: now.Add(-30 * 24 * time.Hour), Settled: now.Add(-time.Minute)}},
		{store.Retention{KeepCount: 1000}, true, store.Prune{Keep: 1000, Settled: now.Add(-time.Minute)}},
	} {
		if got := c.r.Prune(now); c.r.On() != c.on || got != c.want {
			t.Errorf("%+v: On %v, Prune %+v; want %v, %+v", c.r, c.r.On(), got, c.on, c.want)
		}
	}
}
