package engine

import (
	"context"
	"errors"
	"fmt"
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
				e.checkHeld(ctx)
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

// releaseNow releases runID's lease held by this process. It reports
// false when the store could not be asked; a run that is no longer ours
// (or gone) counts as released.
func (e *Engine) releaseNow(ctx context.Context, runID string) bool {
	err := e.store.ReleaseRun(ctx, runID, e.cfg.Owner)
	return err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict)
}

// releasePending retries failed lease releases.
func (e *Engine) releasePending(ctx context.Context) {
	e.claimMu.Lock()
	defer e.claimMu.Unlock()
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
		var done chan struct{}
		if !live && !loading {
			// While the release is in flight the run counts as loading: a
			// recovery of it here (deliver) waits, and takes its lease
			// after the release, never before it (the release would end
			// the new driver's lease: its writes would be refused, and
			// the run driven again elsewhere).
			done = make(chan struct{})
			e.loading[id] = done
		}
		e.mu.Unlock()
		if live {
			// Driven here again (recovered by this process): the lease
			// is the new driver's, not the one left behind.
			e.unreleasedMu.Lock()
			delete(e.unreleased, id)
			e.unreleasedMu.Unlock()
			continue
		}
		if done == nil {
			// Being loaded here: the load may yet fail (the database that
			// failed the driver may still be down), and the run would then
			// stay leased to this process with nobody driving it, its
			// lease kept alive by the renewals of all of ours. Look again
			// next time: by then it is driven (dropped above) or not.
			continue
		}
		released := e.releaseNow(ctx, id)
		e.mu.Lock()
		delete(e.loading, id)
		close(done)
		e.mu.Unlock()
		if released {
			e.unreleasedMu.Lock()
			delete(e.unreleased, id)
			e.unreleasedMu.Unlock()
		}
	}
}

// checkHeld asks the store which runs this process holds and stops the
// drivers of the others: a process that stalled (suspended, or cut off
// from its database) past its leases may find its runs taken over, and a
// renewal alone does not say so (it renews only what is still ours).
func (e *Engine) checkHeld(ctx context.Context) {
	asked := time.Now()
	ids, err := e.store.HeldRuns(ctx, e.cfg.Owner)
	if err != nil {
		e.log.Warn("list held runs", "err", err)
		return
	}
	held := make(map[string]bool, len(ids))
	for _, id := range ids {
		held[id] = true
	}
	e.mu.Lock()
	var gone []*runner
	for id, r := range e.live {
		if !held[id] && r.acquiredAt.Before(asked) {
			gone = append(gone, r)
		}
	}
	e.mu.Unlock()
	for _, r := range gone {
		e.markLost(r)
	}
	e.heldAt.Store(asked.UnixNano())
}

// markLost stops a runner whose lease is gone: from now on it writes and
// starts nothing, and its loop lets go of the run.
func (e *Engine) markLost(r *runner) {
	if r.leaseGone.Swap(true) {
		return
	}
	e.log.Warn("this process no longer holds the run; stopping its driver", "run", r.run.ID)
	r.post(request{kind: reqLost})
}

// holdsRun reports whether this process still holds r's run before a
// node starts work with effects outside the run (a process, a tool call):
// a driver that stalled past its lease must not act for a run another
// process drives now. The renewal loop's last look answers at no cost;
// older than half a lease, the store is asked.
func (e *Engine) holdsRun(ctx context.Context, r *runner) error {
	if r.leaseGone.Load() {
		return ErrLeaseLost
	}
	at := time.Unix(0, e.heldAt.Load())
	if time.Since(at) < e.cfg.LeaseTTL/2 || r.acquiredAt.After(at) && time.Since(r.acquiredAt) < e.cfg.LeaseTTL/2 {
		return nil
	}
	ids, err := e.store.HeldRuns(ctx, e.cfg.Owner)
	if err != nil {
		return fmt.Errorf("check the run's lease: %w", err)
	}
	for _, id := range ids {
		if id == r.run.ID {
			return nil
		}
	}
	e.markLost(r)
	return ErrLeaseLost
}
