// Package ownerlock makes the death of a run driver on this machine
// knowable at once: each driving process holds an flock on a file of its
// own (DIR/<owner>.lock) for its lifetime, which the kernel releases when
// the process dies however it dies. Another process that can take that
// lock knows the owner is dead and need not wait for its leases to
// expire. Owners on other hosts prove nothing here: a lock file records
// its host, and only owners of this host are ever declared dead.
package ownerlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/google/uuid"
)

// Registry is this process's lock file in DIR and the view of the others.
type Registry struct {
	dir   string
	owner string
	host  string
	mu    sync.Mutex
	f     *os.File // held (flocked) until Close
}

// record is what a lock file says of its owner.
type record struct {
	Owner string `json:"owner"`
	Host  string `json:"host"`
	PID   int    `json:"pid"`
}

// NewOwner returns a lease owner name for this process: host/pid/random.
func NewOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
}

// fileName is owner's lock file name: owner names hold slashes.
func fileName(owner string) string {
	return strings.NewReplacer("/", "_", "\\", "_", ":", "_").Replace(owner) + ".lock"
}

// Register creates and locks owner's lock file in dir (created if need
// be) for as long as the process lives or until Close.
func Register(dir, owner string) (*Registry, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("owner lock: %w", err)
	}
	host, _ := os.Hostname()
	rec, err := json.Marshal(record{Owner: owner, Host: host, PID: os.Getpid()})
	if err != nil {
		return nil, err
	}
	// Written and locked under a temporary name, then renamed: no other
	// process ever sees the file unlocked while its owner lives.
	tmp, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return nil, fmt.Errorf("owner lock: %w", err)
	}
	if err := syscall.Flock(int(tmp.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("owner lock %s: %w", tmp.Name(), err)
	}
	final := filepath.Join(dir, fileName(owner))
	if _, err := tmp.Write(append(rec, '\n')); err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("owner lock %s: %w", final, err)
	}
	return &Registry{dir: dir, owner: owner, host: host, f: tmp}, nil
}

// Owner is the owner this registry holds the lock of.
func (r *Registry) Owner() string { return r.owner }

// Dead lists the owners of this host whose lock is free: their process is
// gone. Files it cannot read or parse are left alone.
func (r *Registry) Dead() []string {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return nil
	}
	var dead []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".lock") || strings.HasPrefix(name, ".") || name == fileName(r.owner) {
			continue
		}
		if rec, ok := r.deadRecord(filepath.Join(r.dir, name)); ok {
			dead = append(dead, rec.Owner)
		}
	}
	return dead
}

// deadRecord reads the lock file at p if its lock is free and its owner
// ran on this host.
func (r *Registry) deadRecord(p string) (record, bool) {
	f, err := os.Open(p)
	if err != nil {
		return record{}, false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return record{}, false // held: its owner lives
	}
	var rec record
	if err := json.NewDecoder(f).Decode(&rec); err != nil || rec.Owner == "" {
		return record{}, false
	}
	if rec.Host != r.host || fileName(rec.Owner) != filepath.Base(p) {
		return record{}, false // another host's (a shared disk): leases rule
	}
	return rec, true
}

// Forget removes a dead owner's lock file once its runs were freed; an
// owner that is not dead (any more) is left alone.
func (r *Registry) Forget(owner string) error {
	p := filepath.Join(r.dir, fileName(owner))
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("forget owner %s: %w", owner, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil // held after all: not dead
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forget owner %s: %w", owner, err)
	}
	return nil
}

// Close removes this process's lock file and releases the lock. Call it
// after the engine using the owner closed.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := os.Remove(filepath.Join(r.dir, fileName(r.owner)))
	r.f.Close()
	r.f = nil
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return err
}
