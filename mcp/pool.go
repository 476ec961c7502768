package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// MaxRestarts is how many times a Pool starts a server again after its
// session ended (a crash) before it gives up on it for the pool's life.
const MaxRestarts = 3

// Pool holds the sessions of one config's servers, keyed by server name:
// each connects on first use and all close on Close (the engine makes one
// per run). A server whose session ended (it crashed) is connected again
// on next use, up to MaxRestarts times; a failed connect is remembered and
// not tried again. Safe for concurrent use.
type Pool struct {
	cfg    Config
	opts   Options
	ctx    context.Context // ends connects in progress on Close
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	servers map[string]*poolEntry
}

type poolEntry struct {
	ready    chan struct{} // closed when the connect in progress ends
	sess     *Session
	err      error
	restarts int
}

// NewPool makes a pool of cfg's servers; nothing starts until used.
func NewPool(cfg Config, opts Options) *Pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{cfg: cfg, opts: opts, ctx: ctx, cancel: cancel, servers: map[string]*poolEntry{}}
}

// Names are the pool's server names, sorted.
func (p *Pool) Names() []string { return p.cfg.Names() }

// Session returns the server's session, connecting it if needed. A
// caller whose ctx ends stops waiting; the connect goes on for others.
func (p *Pool) Session(ctx context.Context, name string) (*Session, error) {
	sc, ok := p.cfg.Servers[name]
	if !ok {
		return nil, fmt.Errorf("mcp server %q is not configured (have: %v)", name, p.cfg.Names())
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("mcp server %q: pool %w", name, ErrClosed)
	}
	e := p.servers[name]
	switch {
	case e == nil:
		e = p.start(name, sc, 0)
	case !isDone(e.ready), e.err != nil:
		// connecting, or failed for good: wait for (or return) that
	case sessionEnded(e.sess):
		old := e.sess
		go old.Close() // reap what is left of it
		if e.restarts >= MaxRestarts {
			e.sess = nil
			e.err = fmt.Errorf("mcp server %q: its session ended %d times; not started again: %w", name, e.restarts+1, ErrServerExited)
			break
		}
		e = p.start(name, sc, e.restarts+1)
	}
	p.mu.Unlock()

	select {
	case <-e.ready:
	case <-ctx.Done():
		return nil, fmt.Errorf("mcp server %q: %w", name, ctx.Err())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return e.sess, e.err
}

// start begins connecting a server; p.mu is held.
func (p *Pool) start(name string, sc ServerConfig, restarts int) *poolEntry {
	e := &poolEntry{ready: make(chan struct{}), restarts: restarts}
	p.servers[name] = e
	go func() {
		// The pool's context, not a caller's: a caller giving up must not
		// fail the connect for the others waiting.
		s, err := Connect(p.ctx, name, sc, p.opts)
		p.mu.Lock()
		e.sess, e.err = s, err
		close(e.ready)
		p.mu.Unlock()
	}()
	return e
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// sessionEnded reports whether a session's connection has ended (its
// server exited) though nobody closed it.
func sessionEnded(s *Session) bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Tools lists the tools of the named servers (all when none are named),
// connecting them as needed, in server name order.
func (p *Pool) Tools(ctx context.Context, names ...string) ([]Tool, error) {
	if len(names) == 0 {
		names = p.cfg.Names()
	} else {
		names = append([]string(nil), names...)
		sort.Strings(names)
	}
	var all []Tool
	for _, n := range names {
		s, err := p.Session(ctx, n)
		if err != nil {
			return nil, err
		}
		tools, err := s.Tools(ctx)
		if err != nil {
			return nil, err
		}
		all = append(all, tools...)
	}
	return all, nil
}

// Call calls a server's tool (see Session.Call), connecting it if needed.
func (p *Pool) Call(ctx context.Context, server, tool string, args json.RawMessage) (Result, error) {
	s, err := p.Session(ctx, server)
	if err != nil {
		return Result{}, err
	}
	return s.Call(ctx, tool, args)
}

// Close closes every session (concurrently) and ends connects in
// progress; later use is an error. Idempotent.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	entries := make([]*poolEntry, 0, len(p.servers))
	for _, e := range p.servers {
		entries = append(entries, e)
	}
	p.mu.Unlock()
	p.cancel()
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-e.ready
			p.mu.Lock()
			s := e.sess
			p.mu.Unlock()
			if s != nil {
				s.Close()
			}
		}()
	}
	wg.Wait()
	return nil
}
