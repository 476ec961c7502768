package server

import (
	"net"
	"net/http"
	"sync"
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

	mu      sync.Mutex
	idle    map[*limitedConn]time.Time // since when each is idle
	waiting bool                       // an accepted connection waits for a slot
}

func newConnLimiter(ln net.Listener, n int) *connLimiter {
	return &connLimiter{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{}),
		idle: map[*limitedConn]time.Time{}}
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
		l.mu.Lock()
		l.waiting = true
		victim := l.longestIdle()
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
		l.mu.Lock()
		l.waiting = false
		l.mu.Unlock()
	}
	return &limitedConn{Conn: c, l: l}, nil
}

// Close stops Accept, also one waiting for a slot.
func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// longestIdle takes the connection idle longest out of the idle set (nil
// if none). l.mu is held.
func (l *connLimiter) longestIdle() *limitedConn {
	var victim *limitedConn
	var since time.Time
	for c, t := range l.idle {
		if victim == nil || t.Before(since) {
			victim, since = c, t
		}
	}
	if victim != nil {
		delete(l.idle, victim)
	}
	return victim
}

// connState follows the connections' states (http.Server.ConnState).
func (l *connLimiter) connState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	if st != http.StateIdle {
		delete(l.idle, c)
		l.mu.Unlock()
		return
	}
	if l.waiting {
		// A connection is waiting for this slot: the idle one goes.
		l.mu.Unlock()
		c.Close()
		return
	}
	l.idle[c] = time.Now()
	l.mu.Unlock()
}

// limitedConn frees its slot when closed (once, whoever closes it first:
// the server or the limiter making room).
type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.idle, c)
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return err
}
