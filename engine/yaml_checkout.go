package engine

import (
	"context"
	"sync"

	"github.com/switchyard/switchyard/internal/dirlock"
)

// Runs of workflows with mutates_checkout (the default) take the working
// directory for as long as their loop drives them: from their first node
// that runs a process there (bash, script, until_bash) until they pause or
// end. A second such run in the same directory waits, with a warning event
// saying who holds it (see internal/dirlock: in-process and across
// processes).

// checkoutHold is one runner's hold on its working directory.
type checkoutHold struct {
	mu   sync.Mutex
	held bool
}

// holdCheckout takes the run's working directory before its first
// process runs there, and releases it when the run's loop exits.
func (rs *yamlRunState) holdCheckout(ctx context.Context, x *Exec) error {
	dir := x.WorkDir()
	if !rs.wf.MutatesCheckout || dir == "" {
		return nil
	}
	h := &rs.checkout
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		return nil
	}
	l, err := dirlock.Acquire(ctx, dir, x.RunID(), func(msg string, data map[string]any) {
		if data == nil {
			x.Emit(EvWarning, msg, nil)
			return
		}
		x.Emit(EvWarning, msg, data)
	})
	if err != nil {
		return err
	}
	h.held = true
	exited := x.r.exited
	go func() {
		<-exited
		h.mu.Lock()
		h.held = false
		h.mu.Unlock()
		l.Release()
	}()
	return nil
}
