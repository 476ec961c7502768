package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Runs of workflows with mutates_checkout (the default) take the working
// directory for as long as their loop drives them: from their first node
// that runs a process there (bash, script, until_bash) until they pause or
// end. A second such run in the same directory waits,
// with a warning event saying who holds it. The lock is in-process (keyed
// by the absolute directory) plus an flock on .switchyard/checkout.lock in
// the directory, so runs of other processes are kept out too.

// checkoutHold is one runner's hold on its working directory.
type checkoutHold struct {
	mu   sync.Mutex
	held bool
}

// checkoutLocks are this process's working-directory locks.
var checkoutLocks = struct {
	mu sync.Mutex
	m  map[string]*dirLock
}{m: map[string]*dirLock{}}

type dirLock struct {
	slot   chan struct{} // one token: the holder took it
	holder string        // run id of the holder, for messages
}

func dirLockFor(dir string) *dirLock {
	checkoutLocks.mu.Lock()
	defer checkoutLocks.mu.Unlock()
	l, ok := checkoutLocks.m[dir]
	if !ok {
		l = &dirLock{slot: make(chan struct{}, 1)}
		checkoutLocks.m[dir] = l
	}
	return l
}

// lockPoll is how often a waiter retries a lock held by another process.
const lockPoll = 100 * time.Millisecond

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
	l := dirLockFor(dir)
	select {
	case l.slot <- struct{}{}:
	default:
		checkoutLocks.mu.Lock()
		holder := l.holder
		checkoutLocks.mu.Unlock()
		x.Emit(EvWarning, fmt.Sprintf("waiting for the working directory %s: run %s is changing it (mutates_checkout)", dir, holder),
			map[string]any{"holder": holder})
		select {
		case l.slot <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	checkoutLocks.mu.Lock()
	l.holder = x.RunID()
	checkoutLocks.mu.Unlock()
	release := func() {
		checkoutLocks.mu.Lock()
		l.holder = ""
		checkoutLocks.mu.Unlock()
		<-l.slot
	}
	f, err := lockFile(ctx, x, dir)
	if err != nil {
		release()
		return err
	}
	h.held = true
	exited := x.r.exited
	go func() {
		<-exited
		if f != nil {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}
		h.mu.Lock()
		h.held = false
		h.mu.Unlock()
		release()
	}()
	return nil
}

// lockFile takes the cross-process lock file; a directory where it cannot
// be created (read-only) only gets the in-process lock, with a warning.
func lockFile(ctx context.Context, x *Exec, dir string) (*os.File, error) {
	p := filepath.Join(dir, ".switchyard", "checkout.lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		x.Emit(EvWarning, "cannot create the checkout lock file (other processes are not kept out): "+err.Error(), nil)
		return nil, nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		x.Emit(EvWarning, "cannot open the checkout lock file (other processes are not kept out): "+err.Error(), nil)
		return nil, nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(p)
		x.Emit(EvWarning, fmt.Sprintf("waiting for the working directory %s: another process holds %s (%s)",
			dir, p, strings.TrimSpace(string(holder))), nil)
		if err := flockCtx(ctx, f); err != nil {
			f.Close()
			return nil, err
		}
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("run %s pid %d\n", x.RunID(), os.Getpid())), 0)
	return f, nil
}

// flockCtx takes an exclusive flock on f, giving up when ctx ends.
func flockCtx(ctx context.Context, f *os.File) error {
	t := time.NewTicker(lockPoll)
	defer t.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
