// Package dirlock keeps two holders out of one working directory: runs of
// this process (an in-process slot per absolute directory) and runs of
// other processes (an flock on .switchyard/checkout.lock in the directory).
package dirlock

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

// poll is how often a waiter retries a lock held by another process.
const poll = 100 * time.Millisecond

// Notify tells the caller why it waits, or that the directory is only
// locked in-process. data may be nil.
type Notify func(msg string, data map[string]any)

// locks are this process's directory slots.
var locks = struct {
	mu sync.Mutex
	m  map[string]*slot
}{m: map[string]*slot{}}

type slot struct {
	token  chan struct{} // one token: the holder took it
	holder string        // who holds it, for messages
}

func slotFor(dir string) *slot {
	locks.mu.Lock()
	defer locks.mu.Unlock()
	s, ok := locks.m[dir]
	if !ok {
		s = &slot{token: make(chan struct{}, 1)}
		locks.m[dir] = s
	}
	return s
}

// Lock is a hold on a directory; Release gives it back.
type Lock struct {
	s    *slot
	f    *os.File // nil when the lock file could not be used
	once sync.Once
}

// Acquire takes dir for owner (shown to waiters), waiting as long as ctx
// allows. notify (may be nil) hears once why it waits. A directory where
// the lock file cannot be created (read-only) gets the in-process lock
// only, and notify says so.
func Acquire(ctx context.Context, dir, owner string, notify Notify) (*Lock, error) {
	if notify == nil {
		notify = func(string, map[string]any) {}
	}
	s := slotFor(dir)
	select {
	case s.token <- struct{}{}:
	default:
		locks.mu.Lock()
		holder := s.holder
		locks.mu.Unlock()
		notify(fmt.Sprintf("waiting for the working directory %s: run %s is changing it (mutates_checkout)", dir, holder),
			map[string]any{"holder": holder})
		select {
		case s.token <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	locks.mu.Lock()
	s.holder = owner
	locks.mu.Unlock()
	l := &Lock{s: s}
	f, err := lockFile(ctx, dir, owner, notify)
	if err != nil {
		l.releaseSlot()
		return nil, err
	}
	l.f = f
	return l, nil
}

// Release gives the directory back; later calls do nothing.
func (l *Lock) Release() {
	l.once.Do(func() {
		if l.f != nil {
			_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
			l.f.Close()
		}
		l.releaseSlot()
	})
}

func (l *Lock) releaseSlot() {
	locks.mu.Lock()
	l.s.holder = ""
	locks.mu.Unlock()
	<-l.s.token
}

// lockFile takes the cross-process lock file; a directory where it cannot
// be created only gets the in-process lock, with a notice.
func lockFile(ctx context.Context, dir, owner string, notify Notify) (*os.File, error) {
	p := filepath.Join(dir, ".switchyard", "checkout.lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		notify("cannot create the checkout lock file (other processes are not kept out): "+err.Error(), nil)
		return nil, nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		notify("cannot open the checkout lock file (other processes are not kept out): "+err.Error(), nil)
		return nil, nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(p)
		notify(fmt.Sprintf("waiting for the working directory %s: another process holds %s (%s)",
			dir, p, strings.TrimSpace(string(holder))), nil)
		if err := Flock(ctx, f); err != nil {
			f.Close()
			return nil, err
		}
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("run %s pid %d\n", owner, os.Getpid())), 0)
	return f, nil
}

// Flock takes an exclusive flock on f, giving up when ctx ends.
func Flock(ctx context.Context, f *os.File) error {
	t := time.NewTicker(poll)
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
