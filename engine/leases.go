package engine

import (
	"context"
	"errors"
	"time"
)

// Leases: this process renews the leases of the runs it drives, and
// releases those whose loop ended while the store refused it.

// renewLeases keeps this process's run leases alive and acts on cancel
// requests left for its runs.
func (e *Engine) renewLeases() {
	defer e.wg.Done()
	t := time.NewTicker(e.cfg.LeaseTTL / 3)
	defer t.Stop()
	cp := time.NewTicker(cancelPoll)
	defer cp.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-cp.C:
			e.takeCancelRequests()
		case <-e.cancelWake:
			e.takeCancelRequests()
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.LeaseTTL/3)
			e.releasePending(ctx)
			now := time.Now()
			if err := e.store.RenewLeases(ctx, e.cfg.Owner, now.Add(e.cfg.LeaseTTL)); err != nil {
				e.log.Error("renew run leases", "err", err)
			} else {
				e.lastRenew.Store(now.UnixNano())
			}
			cancel()
		}
	}
}

// leaseStale reports whether this process's leases may have expired.
func (e *Engine) leaseStale() bool {
	return time.Since(time.Unix(0, e.lastRenew.Load())) > e.cfg.LeaseTTL
}

func (e *Engine) addUnreleased(runID string) {
	e.unreleasedMu.Lock()
	e.unreleased[runID] = true
	e.unreleasedMu.Unlock()
}

// releasePending retries failed lease releases.
func (e *Engine) releasePending(ctx context.Context) {
	e.unreleasedMu.Lock()
	ids := make([]string, 0, len(e.unreleased))
	for id := range e.unreleased {
		ids = append(ids, id)
	}
	e.unreleasedMu.Unlock()
	for _, id := range ids {
		e.mu.Lock()
		_, live := e.live[id]
		_, loading := e.loading[id]
		e.mu.Unlock()
		if live || loading {
			// Driven here again (recovered by this process): the lease
			// is the new driver's, not the one left behind.
			e.unreleasedMu.Lock()
			delete(e.unreleased, id)
			e.unreleasedMu.Unlock()
			continue
		}
		err := e.store.ReleaseRun(ctx, id, e.cfg.Owner)
		if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
			e.unreleasedMu.Lock()
			delete(e.unreleased, id)
			e.unreleasedMu.Unlock()
		}
	}
}
