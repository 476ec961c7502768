package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func (p *workers) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// Nothing waits for a free worker: n functions that block until all n
// have started all start, however few workers are idle.
func TestWorkersNeverCapConcurrency(t *testing.T) {
	p := newWorkers(2, time.Minute)
	const n = 50
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	var done sync.WaitGroup
	done.Add(n)
	for range n {
		p.Go(func() {
			started.Done()
			<-release
			done.Done()
		})
	}
	started.Wait() // would hang if Go queued work behind busy workers
	if s := p.spawned.Load(); s != n {
		t.Fatalf("spawned %d, want %d", s, n)
	}
	close(release)
	done.Wait()
	// At most max stay; the others end.
	waitFor(t, func() bool { return p.idleCount() == 2 }, "two idle workers")
}

// A worker that finished is reused: the next function runs on it instead
// of a new goroutine, and every function runs exactly once.
func TestWorkersReuseAndRunEachOnce(t *testing.T) {
	p := newWorkers(4, time.Minute)
	var ran atomic.Int64
	for range 1000 {
		done := make(chan struct{})
		p.Go(func() { ran.Add(1); close(done) })
		<-done
		// Let the worker go idle, as a run's loop does between steps.
		waitFor(t, func() bool { return p.idleCount() >= 1 }, "a worker to go idle")
	}
	if got := ran.Load(); got != 1000 {
		t.Fatalf("ran %d functions, want 1000", got)
	}
	if s := p.spawned.Load(); s != 1 {
		t.Fatalf("started %d goroutines for 1,000 functions one after another, want 1", s)
	}
}

// Idle workers end after idleFor: a burst leaves no goroutines behind.
func TestWorkersEndWhenIdle(t *testing.T) {
	before := runtime.NumGoroutine()
	p := newWorkers(100, 20*time.Millisecond)
	var wg sync.WaitGroup
	wg.Add(50)
	release := make(chan struct{})
	for range 50 {
		p.Go(func() { <-release; wg.Done() })
	}
	close(release)
	wg.Wait()
	waitFor(t, func() bool { return p.idleCount() == 0 }, "idle workers to end")
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before }, "their goroutines to exit")
}

// Work handed to a worker just as its idle time runs out is still run.
func TestWorkersIdleTimeoutRace(t *testing.T) {
	p := newWorkers(8, time.Microsecond)
	var ran atomic.Int64
	const n = 20000
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		p.Go(func() { ran.Add(1); wg.Done() })
		if i%64 == 0 {
			time.Sleep(time.Microsecond) // let some go idle and time out
		}
	}
	wg.Wait()
	if got := ran.Load(); got != n {
		t.Fatalf("ran %d, want %d", got, n)
	}
}

// close ends the idle workers at once, and Go still runs functions after.
func TestWorkersClose(t *testing.T) {
	p := newWorkers(10, time.Hour)
	var wg sync.WaitGroup
	wg.Add(5)
	release := make(chan struct{})
	for range 5 {
		p.Go(func() { <-release; wg.Done() })
	}
	close(release)
	wg.Wait()
	waitFor(t, func() bool { return p.idleCount() == 5 }, "five idle workers")
	p.close()
	waitFor(t, func() bool { return p.idleCount() == 0 }, "no idle workers")
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
	waitFor(t, func() bool { return p.idleCount() == 0 }, "the late worker not kept")
}
