//go:build unix

package sqlite

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on path (created if needed), waiting
// until ctx ends; unlock releases it. It is what makes processes started
// together on a new database (two serve --data DIR) migrate it one after
// the other: goose runs each migration in its own transaction and the
// loser of a race would find the tables already there. flock, not SQLite's
// own fcntl locks: the two never interfere on Linux, and the file is a
// separate one, so SQLite's locks on the database are untouched.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: another process holds it: %w", path, ctx.Err())
		case <-time.After(delay):
		}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close() // closing releases the lock too
	}, nil
}
