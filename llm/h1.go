package llm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// h1Transport sends calls to plain http:// endpoints (local model servers
// such as Ollama, vLLM and LM Studio, and the fake LLM) over HTTP/1.1 on
// the calling goroutine. net/http's transport runs two goroutines per
// connection, a reader and a writer, and hands every request and
// response between them and the caller over channels: on the 16-core
// machine those loops were 13 % of the server's CPU a run of `switchyard
// load runs` at 1 core (45 µs of 350) and more on more cores, where each
// handoff wakes another core. Here the caller writes the request (head
// and body in one write) and reads the response itself, parsed by
// net/http's own http.ReadResponse; an idle connection waits in a pool
// with no goroutine at all.
//
// Anything else goes to the fallback (net/http): https:// (TLS, HTTP/2),
// a request a proxy from the environment applies to, a body of unknown
// length or over h1MaxBody, Expect: 100-continue, a protocol upgrade.
type h1Transport struct {
	fallback    http.RoundTripper
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle     int                      // idle connections kept per host
	idleTimeout time.Duration            // an idle connection older than this is closed
	proxied     func(*http.Request) bool // a proxy applies: the fallback sends it

	mu    sync.Mutex
	idle  map[string][]*h1Conn // by host:port, most recently used last
	nIdle int
	sweep *time.Timer
}

// h1Conn is one connection of the pool.
type h1Conn struct {
	c      net.Conn
	br     *bufio.Reader
	key    string
	idleAt time.Time
	reused bool
}

// h1MaxBody is the largest request body sent here. The request is written
// before its answer is read, so a server that answers (and stops reading)
// before the end of a body larger than the socket's buffers could leave
// the write waiting; net/http writes and reads at once, in goroutines of
// its own. A chat request is a few KiB to a few hundred.
const h1MaxBody = 1 << 20

// h1ReadBuffer is each connection's read buffer, net/http's default: a
// chat chunk is a few hundred bytes.
const h1ReadBuffer = 4 << 10

func newH1Transport(fallback http.RoundTripper, maxIdle int) *h1Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &h1Transport{
		fallback:    fallback,
		dial:        d.DialContext,
		maxIdle:     maxIdle,
		idleTimeout: 90 * time.Second,
		proxied:     envProxied,
		idle:        map[string][]*h1Conn{},
	}
}

// envProxied reports whether the environment's proxy settings
// (HTTP_PROXY, NO_PROXY), which net/http's default transport follows,
// apply to req (or cannot be read: net/http then says why).
func envProxied(req *http.Request) bool {
	u, err := http.ProxyFromEnvironment(req)
	return u != nil || err != nil
}

// handles reports whether req is one this transport sends itself.
func (t *h1Transport) handles(req *http.Request) bool {
	if req.URL.Scheme != "http" || req.URL.Host == "" || req.ContentLength < 0 || req.ContentLength > h1MaxBody ||
		(req.ContentLength > 0 && (req.Body == nil || req.Body == http.NoBody)) ||
		req.Header.Get("Expect") != "" || req.Header.Get("Upgrade") != "" || len(req.TransferEncoding) > 0 || req.Trailer != nil {
		return false
	}
	return !t.proxied(req)
}

func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	head, err := t.encode(req)
	if req.Body != nil {
		_ = req.Body.Close() // a RoundTripper closes the body it was given, even on errors
	}
	if err != nil {
		putHeadBuf(head)
		return nil, err
	}
	key := hostPort(req)
	for attempt := 0; ; attempt++ {
		c, err := t.get(ctx, key, attempt > 0)
		if err != nil {
			putHeadBuf(head)
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			return nil, err
		}
		resp, err := t.exchange(ctx, c, req, head.Bytes())
		if err == nil {
			putHeadBuf(head)
			return resp, nil
		}
		c.c.Close()
		// A kept connection the server closed while it sat idle, after the
		// check in get, took no byte of the request: it goes once more on
		// a new connection, as net/http sends a request again only when
		// nothing of it was written (a POST is not sent twice otherwise).
		var nw *h1NothingWritten
		if attempt == 0 && c.reused && errors.As(err, &nw) && ctx.Err() == nil {
			continue
		}
		putHeadBuf(head)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
}

// h1NothingWritten is a write that failed before any byte of the
// request was sent.
type h1NothingWritten struct{ err error }

func (e *h1NothingWritten) Error() string { return e.err.Error() }
func (e *h1NothingWritten) Unwrap() error { return e.err }

var headBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putHeadBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		b.Reset()
		headBufs.Put(b)
	}
}

// encode writes req's head and body, as net/http would send them, into a
// pooled buffer.
func (t *h1Transport) encode(req *http.Request) (*bytes.Buffer, error) {
	b := headBufs.Get().(*bytes.Buffer)
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	b.WriteString(method)
	b.WriteByte(' ')
	b.WriteString(req.URL.RequestURI())
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(host)
	b.WriteString("\r\n")
	if req.Header.Get("User-Agent") == "" {
		b.WriteString("User-Agent: Go-http-client/1.1\r\n")
	}
	for k, vs := range req.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Host", "Content-Length", "Connection", "Transfer-Encoding", "Trailer":
			continue
		}
		if !httpguts.ValidHeaderFieldName(k) {
			return b, fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return b, fmt.Errorf("net/http: invalid header field value for %q", k)
			}
			b.WriteString(k)
			b.WriteString(": ")
			b.WriteString(v)
			b.WriteString("\r\n")
		}
	}
	if req.Close {
		b.WriteString("Connection: close\r\n")
	}
	if req.ContentLength > 0 || (method != http.MethodGet && method != http.MethodHead) {
		b.WriteString("Content-Length: ")
		b.WriteString(strconv.FormatInt(req.ContentLength, 10))
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	if req.ContentLength > 0 {
		n, err := io.Copy(b, req.Body)
		if err != nil {
			return b, fmt.Errorf("reading the request body: %w", err)
		}
		if n != req.ContentLength {
			return b, fmt.Errorf("http: ContentLength=%d with Body length %d", req.ContentLength, n)
		}
	}
	return b, nil
}

func hostPort(req *http.Request) string {
	h := req.URL.Host
	if req.URL.Port() == "" {
		h = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	return h
}

// exchange sends head on c and reads the response's head. The response's
// body reads from c and gives c back to the pool at its end.
func (t *h1Transport) exchange(ctx context.Context, c *h1Conn, req *http.Request, head []byte) (*http.Response, error) {
	// Whenever the call's context ends, blocked reads and writes on the
	// connection end at once (and the connection is not used again).
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetDeadline(time.Unix(1, 0)) })
	if n, err := c.c.Write(head); err != nil {
		stop()
		if n == 0 {
			return nil, &h1NothingWritten{err}
		}
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			stop()
			return nil, err
		}
		// Informational answers (100 Continue, 103 Early Hints) precede
		// the real one.
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		b := &h1Body{t: t, c: c, ctx: ctx, rc: resp.Body, stop: stop,
			keep: !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols}
		if resp.Body == http.NoBody { // nothing to read: the connection is free now
			b.release(true)
			return resp, nil
		}
		resp.Body = b
		return resp, nil
	}
}

// h1Body is a response's body. Read to its end (EOF), it gives the
// connection back to the pool if nothing else arrived on it; closed before
// that, or after an error, it closes the connection (which also ends a
// Read blocked in another goroutine).
type h1Body struct {
	t    *h1Transport
	c    *h1Conn
	ctx  context.Context
	rc   io.ReadCloser
	stop func() bool
	keep bool

	state atomic.Int32 // bodyOpen, bodyEOF or bodyClosed
}

const (
	bodyOpen = iota
	bodyEOF
	bodyClosed
)

var errBodyClosed = errors.New("http: read on closed response body")

func (b *h1Body) Read(p []byte) (int, error) {
	switch b.state.Load() {
	case bodyEOF:
		return 0, io.EOF
	case bodyClosed:
		return 0, errBodyClosed
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.release(true)
	case err != nil:
		b.release(false)
		// A read cut by the call's context (a deadline set in the past)
		// says so, as net/http's does: callers tell a cancelled call
		// from a broken connection by it.
		if cerr := b.ctx.Err(); cerr != nil {
			err = fmt.Errorf("reading the response: %w", cerr)
		}
	}
	return n, err
}

func (b *h1Body) Close() error {
	b.release(false)
	return nil
}

// release ends the body's use of its connection, once: back to the pool
// when the body was read to its end, the server keeps the connection
// open, the call's context had not ended and nothing else arrived after
// the response; closed otherwise.
func (b *h1Body) release(atEOF bool) {
	to := int32(bodyClosed)
	if atEOF {
		to = bodyEOF
	}
	if !b.state.CompareAndSwap(bodyOpen, to) {
		return
	}
	contextFired := !b.stop()
	if atEOF && b.keep && !contextFired && b.c.br.Buffered() == 0 {
		_ = b.rc.Close() // at EOF: reads nothing more
		b.t.put(b.c)
		return
	}
	// The connection first: net/http's body reads a response to its end
	// when closed early, which on a stream would wait for all of it.
	b.c.c.Close()
	_ = b.rc.Close()
}

// get returns an idle connection to key that is still open, or dials one.
func (t *h1Transport) get(ctx context.Context, key string, fresh bool) (*h1Conn, error) {
	if !fresh {
		for {
			c := t.popIdle(key)
			if c == nil {
				break
			}
			if time.Since(c.idleAt) < t.idleTimeout && stillOpen(c.c) {
				c.reused = true
				return c, nil
			}
			c.c.Close()
		}
	}
	nc, err := t.dial(ctx, "tcp", key)
	if err != nil {
		return nil, err
	}
	return &h1Conn{c: nc, br: bufio.NewReaderSize(nc, h1ReadBuffer), key: key}, nil
}

func (t *h1Transport) popIdle(key string) *h1Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.idle[key]
	if len(cs) == 0 {
		return nil
	}
	c := cs[len(cs)-1]
	cs[len(cs)-1] = nil
	t.idle[key] = cs[:len(cs)-1]
	t.nIdle--
	return c
}

// put keeps c for the next call to its host, unless the host already has
// maxIdle waiting.
func (t *h1Transport) put(c *h1Conn) {
	c.idleAt = time.Now()
	t.mu.Lock()
	if len(t.idle[c.key]) >= t.maxIdle {
		t.mu.Unlock()
		c.c.Close()
		return
	}
	t.idle[c.key] = append(t.idle[c.key], c)
	t.nIdle++
	if t.sweep == nil {
		t.sweep = time.AfterFunc(t.idleTimeout, t.sweepIdle)
	}
	t.mu.Unlock()
}

// sweepIdle closes the connections idle for longer than idleTimeout, so
// a burst's connections do not stay open (half closed by the server)
// until the next burst; it runs while any connection is idle.
func (t *h1Transport) sweepIdle() {
	var old []*h1Conn
	t.mu.Lock()
	for key, cs := range t.idle {
		keep := cs[:0]
		for _, c := range cs {
			if time.Since(c.idleAt) >= t.idleTimeout {
				old = append(old, c)
			} else {
				keep = append(keep, c)
			}
		}
		clear(cs[len(keep):])
		if len(keep) == 0 {
			delete(t.idle, key)
		} else {
			t.idle[key] = keep
		}
	}
	t.nIdle -= len(old)
	t.sweep = nil
	if t.nIdle > 0 {
		t.sweep = time.AfterFunc(t.idleTimeout/2, t.sweepIdle)
	}
	t.mu.Unlock()
	for _, c := range old {
		c.c.Close()
	}
}

// CloseIdleConnections closes the idle connections, the fallback's too.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*h1Conn{}
	t.nIdle = 0
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.c.Close()
		}
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
