package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// workers runs functions on goroutines that are kept after them, instead
// of a new goroutine for each. A node's executor goes deep at once (an
// agent step through openai-go and net/http needs tens of KB of stack): a
// fresh goroutine starts small and copies its stack as it grows, which
// was about 3 % of a short run's CPU (runtime.copystack). A kept worker
// has grown already (copystack 0.75 %). Nothing waits for a free
// worker: when none is idle a new one starts, so concurrency is never
// capped (branches run at once).
type workers struct {
	mu   sync.Mutex
	idle []*worker // most recently idle last: the busy ones stay warm
	// max idle workers kept, and how long one waits for work before it
	// ends; a burst (a 1,000-branch fan-out) leaves no crowd behind.
	max     int
	idleFor time.Duration
	spawned atomic.Int64  // goroutines started, for tests
	stop    chan struct{} // closed by close: idle workers end at once
	stopped bool          // close was called (guarded by mu)
}

type worker struct {
	work chan func()
}

// Idle workers an engine keeps at most, and for how long.
const (
	workersIdleMax = 256
	// Shorter than the wait of tests that count goroutines once things
	// settle (2 s): an idle worker belongs to no run.
	workersIdleFor = time.Second
)

func newWorkers(max int, idleFor time.Duration) *workers {
	return &workers{max: max, idleFor: idleFor, stop: make(chan struct{})}
}

// Go runs fn on an idle worker, or on a new one.
func (p *workers) Go(fn func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.work <- fn // buffered: never blocks
		return
	}
	p.mu.Unlock()
	w := &worker{work: make(chan func(), 1)}
	p.spawned.Add(1)
	go p.run(w, fn)
}

func (p *workers) run(w *worker, fn func()) {
	var t *time.Timer
	for {
		fn()
		fn = nil // let what it held be collected while idle
		p.mu.Lock()
		if len(p.idle) >= p.max || p.stopped {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		if t == nil {
			t = time.NewTimer(p.idleFor)
		} else {
			t.Reset(p.idleFor)
		}
		select {
		case fn = <-w.work:
			t.Stop()
			continue
		case <-t.C:
		case <-p.stop:
			t.Stop()
		}
		// Idle too long, or the engine closed: leave, unless Go took
		// this worker meanwhile, in which case its work is on the way.
		p.mu.Lock()
		for i, x := range p.idle {
			if x == w {
				p.idle = append(p.idle[:i], p.idle[i+1:]...)
				p.mu.Unlock()
				return
			}
		}
		p.mu.Unlock()
		fn = <-w.work
	}
}

// close ends the idle workers; those still busy end when their function
// returns. Go still works after it, on goroutines that are not kept.
func (p *workers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.stopped = true
		close(p.stop)
	}
}
