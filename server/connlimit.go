package server

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// connLimiter caps concurrent connections at a number of slots. When they
// are all taken and a new connection arrives, the connection idle longest
// between keep-alive requests is closed to make room (and any that goes
// idle while the new one waits), so idle clients cannot delay real
// requests; connections in use (a request in flight, a websocket) are
// never closed for it, and the new one waits until one ends.
//
// The listener accepts first and then waits for a slot, so one accepted
// connection may wait beyond the cap: only then is it known that a client
// is waiting (closing idle connections on a hunch would cost every
// keep-alive client its connection whenever the cap is reached).
type connLimiter struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once

	// mu guards conns, changed once per connection (accept, close); the
	// per-request state changes (active, idle) are atomics on each
	// connection, so keep-alive requests on all cores take no shared lock.
	mu      sync.Mutex
	conns   map[*limitedConn]struct{}
	waiting atomic.Bool // an accepted connection waits for a slot
}

func newConnLimiter(ln net.Listener, n int) *connLimiter {
	return &connLimiter{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{}),
		conns: map[*limitedConn]struct{}{}}
}

// Accept returns the next connection once a slot is free.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	select {
	case l.slots <- struct{}{}:
	default:
		l.waiting.Store(true)
		if victim := l.longestIdle(); victim != nil {
			victim.Close()
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			l.waiting.Store(false)
			c.Close()
			return nil, net.ErrClosed
		}
		l.waiting.Store(false)
	}
	lc := &limitedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// Close stops Accept, also one waiting for a slot.
func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// longestIdle takes the connection idle longest out of the idle ones (nil
// if none): it is no longer idle for anyone else looking.
func (l *connLimiter) longestIdle() *limitedConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		var victim *limitedConn
		var since int64
		for c := range l.conns {
			if t := c.idleSince.Load(); t != 0 && (victim == nil || t < since) {
				victim, since = c, t
			}
		}
		if victim == nil || victim.idleSince.CompareAndSwap(since, 0) {
			return victim
		}
		// It went active (or idle again) meanwhile: look again.
	}
}

// idleConns counts the connections idle between requests.
func (l *connLimiter) idleConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := range l.conns {
		if c.idleSince.Load() != 0 {
			n++
		}
	}
	return n
}

// connState follows the connections' states (http.Server.ConnState).
func (l *connLimiter) connState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	if st != http.StateIdle {
		c.idleSince.Store(0)
		return
	}
	if l.waiting.Load() {
		// A connection is waiting for this slot: the idle one goes.
		c.Close()
		return
	}
	c.idleSince.Store(time.Now().UnixNano())
}

// limitedConn frees its slot when closed (once, whoever closes it first:
// the server or the limiter making room).
type limitedConn struct {
	net.Conn
	l         *connLimiter
	once      sync.Once
	idleSince atomic.Int64 // UnixNano since it is idle between requests; 0 while not
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.idleSince.Store(0)
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return err
}
