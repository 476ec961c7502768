package store

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Pruner deletes finished runs: retention.
type Pruner interface {
	// PruneRuns deletes the finished runs (completed, failed or cancelled)
	// p selects, oldest first, with their node states and events, and the
	// definitions no run references any more. It deletes in batches of
	// p.Batch runs, each a short write of its own, pausing p.Pause between
	// them, so it never holds the writer for long. Runs that are pending,
	// running, paused or interrupted are never deleted. SQLite then returns
	// the freed pages to the file system (incremental vacuum), when the
	// database was made with it (every database since migration 11; see
	// sqlite.Store.Vacuum for older ones). With p.DryRun nothing is
	// deleted: what would be is counted.
	PruneRuns(ctx context.Context, p Prune) (Pruned, error)
}

// Prune selects finished runs to delete. Before and Keep add up: a run is
// selected when either selects it; Settled then spares the latest.
type Prune struct {
	// Before selects the runs that finished before it (zero: none by age).
	Before time.Time
	// Keep, when above 0, selects every finished run but the Keep that
	// finished last.
	Keep int
	// Settled, when not zero, spares every run that finished at or after
	// it, whatever Before and Keep say: a run that has just finished may
	// still have events on their way to the store.
	Settled time.Time
	// Batch is the most runs one write deletes (<= 0: DefaultPruneBatch).
	Batch int
	// Pause is the least wait between two batches, leaving the writer to
	// others; a batch that took longer is followed by a pause as long.
	Pause time.Duration
	// DryRun counts what would be deleted and deletes nothing.
	DryRun bool
}

// DefaultPruneBatch is Prune.Batch's default: a batch of short runs takes
// a few milliseconds to delete.
const DefaultPruneBatch = 200

// Pruned counts what PruneRuns deleted (or, dry, would delete).
type Pruned struct {
	Runs        int64 // runs deleted
	Events      int64 // their events
	Definitions int64 // definitions no run referenced any more
	FreedBytes  int64 // bytes the database file shrank by (SQLite's incremental vacuum)
}

// Add adds o to p.
func (p *Pruned) Add(o Pruned) {
	p.Runs += o.Runs
	p.Events += o.Events
	p.Definitions += o.Definitions
	p.FreedBytes += o.FreedBytes
}

// Retention is a retention policy: the finished runs to keep.
type Retention struct {
	// KeepFor keeps runs that finished within it (0: no limit by age).
	KeepFor time.Duration
	// KeepCount keeps the KeepCount runs that finished last (0: no limit
	// by count).
	KeepCount int
}

// On reports whether the policy deletes anything at all.
func (r Retention) On() bool { return r.KeepFor > 0 || r.KeepCount > 0 }

// settleTime is how long a finished run is always kept, whatever the
// policy: its last events may still be on their way to the store.
const settleTime = time.Minute

// Prune is the selection of runs the policy deletes at now.
func (r Retention) Prune(now time.Time) Prune {
	p := Prune{Keep: r.KeepCount, Settled: now.Add(-settleTime)}
	if r.KeepFor > 0 {
		p.Before = now.Add(-r.KeepFor)
	}
	return p
}

// Retainer applies a retention policy in the background: a pass right
// away, then one every interval. Its counters feed /metrics.
type Retainer struct {
	st       Pruner
	policy   Retention
	interval time.Duration
	pause    time.Duration
	log      *slog.Logger
	now      func() time.Time

	mu           sync.Mutex // guards pruned
	pruned       Pruned
	passes, errs atomic.Uint64

	stop context.CancelFunc
	done chan struct{}
}

// DefaultRetentionInterval is how often a Retainer looks for runs to prune.
const DefaultRetentionInterval = time.Minute

// StartRetention starts applying policy to st every interval (<= 0:
// DefaultRetentionInterval), until Stop or ctx ends. Between batches it
// pauses as long as the last batch took (at least 5 ms): pruning takes at
// most about half of the writer's time, even through a large backlog.
func StartRetention(ctx context.Context, st Pruner, policy Retention, interval time.Duration, log *slog.Logger) *Retainer {
	if interval <= 0 {
		interval = DefaultRetentionInterval
	}
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Retainer{st: st, policy: policy, interval: interval, pause: 5 * time.Millisecond, log: log,
		now: time.Now, stop: cancel, done: make(chan struct{})}
	go r.loop(ctx)
	return r
}

func (r *Retainer) loop(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		r.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Retainer) pass(ctx context.Context) {
	p := r.policy.Prune(r.now())
	p.Pause = r.pause
	got, err := r.st.PruneRuns(ctx, p)
	r.passes.Add(1)
	r.mu.Lock()
	r.pruned.Add(got)
	r.mu.Unlock()
	switch {
	case err != nil && ctx.Err() == nil:
		r.errs.Add(1)
		r.log.Warn("retention: pruning finished runs", "err", err, "runs", got.Runs)
	case got.Runs > 0:
		r.log.Info("retention: pruned finished runs", "runs", got.Runs, "events", got.Events,
			"definitions", got.Definitions, "freed_bytes", got.FreedBytes)
	}
}

// Stop ends the loop (a batch in progress finishes) and waits for it.
func (r *Retainer) Stop() {
	r.stop()
	<-r.done
}

// RetentionStats are a Retainer's counters since it started.
type RetentionStats struct {
	Passes uint64 // passes over the runs
	Errors uint64 // passes that failed
	Pruned        // what was deleted
}

// Stats returns the counters.
func (r *Retainer) Stats() RetentionStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RetentionStats{Passes: r.passes.Load(), Errors: r.errs.Load(), Pruned: r.pruned}
}
