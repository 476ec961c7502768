package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// serveWithLimits serves v's engine and store through Server.Serve on loopback
// (listener, timeouts and connection cap as in production), with cfg's
// limits applied on top.
func serveWithLimits(t *testing.T, v *env, tune func(*Config)) string {
	t.Helper()
	addr, _ := serveWithLimitsSrv(t, v, tune)
	return addr
}

// serveWithLimitsSrv is serveWithLimits, also returning the server.
func serveWithLimitsSrv(t *testing.T, v *env, tune func(*Config)) (string, *Server) {
	t.Helper()
	cfg := Config{Engine: v.e, Store: v.st, Addr: "127.0.0.1:0", Token: v.srv.cfg.Token, Logger: v.srv.log}
	tune(&cfg)
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return ln.Addr().String(), srv
}

// slowRequest sends a request's headers and the first byte of a body it
// announces as longer, then stops sending.
func slowRequest(t *testing.T, addr, method, path string, hdr ...string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n", method, path, addr)
	for i := 0; i+1 < len(hdr); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	b.WriteString("\r\n{")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	return c
}

// A client without the token that trickles a body gets its 401 at once,
// not after the body (which never comes).
func TestSlowBodyWithoutTokenGets401AtOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken; o.noHTTP = true })
	addr := serveWithLimits(t, v, func(c *Config) { c.BodyTimeout = time.Minute })
	c := slowRequest(t, addr, "POST", "/api/runs")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // far below the body timeout
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer while the body trickles: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", res.StatusCode)
	}
}

// A body that trickles in is cut at the body timeout: the connection does
// not stay held.
func TestSlowBodyIsCutAtTheBodyTimeout(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.noHTTP = true })
	addr := serveWithLimits(t, v, func(c *Config) { c.BodyTimeout = time.Second })
	c := slowRequest(t, addr, "POST", "/api/validate")
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	start := time.Now()
	got, err := io.ReadAll(c) // a 408 and the close
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection was still held after %v", time.Since(start))
	}
	if !strings.HasPrefix(string(got), "HTTP/1.1 408 ") || !strings.Contains(string(got), `"code":"request_timeout"`) {
		t.Fatalf("answer %q, want a 408 request_timeout", got)
	}
}

// getHealth sends GET /api/health on c and reads the answer.
func getHealth(c net.Conn, addr string) error {
	if _, err := fmt.Fprintf(c, "GET /api/health HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		return err
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	res.Body.Close()
	return nil
}

// Connections beyond MaxConns wait until one in use closes.
func TestMaxConnsCapsConnections(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.noHTTP = true })
	addr := serveWithLimits(t, v, func(c *Config) { c.MaxConns = 2; c.BodyTimeout = time.Minute })
	// Two connections in use: each trickles a request body.
	held := []net.Conn{slowRequest(t, addr, "POST", "/api/validate"), slowRequest(t, addr, "POST", "/api/validate")}
	third, err := net.Dial("tcp", addr) // the kernel accepts; the server does not serve it yet
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	_ = third.SetDeadline(time.Now().Add(time.Second))
	if err := getHealth(third, addr); err == nil {
		t.Fatal("a third connection was served while two were in use (cap 2)")
	}
	third.Close()
	held[0].Close()
	fourth, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fourth.Close()
	_ = fourth.SetDeadline(time.Now().Add(30 * time.Second))
	if err := getHealth(fourth, addr); err != nil {
		t.Fatalf("after a held connection closed: %v", err)
	}
}

// TestIdleConnsMakeRoom: idle keep-alive connections do not hold the cap
// (sixty idle ones against --max-conns 50 delayed real requests): a new
// connection at the cap closes the one idle longest, and connections in
// use are left alone.
func TestIdleConnsMakeRoom(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.noHTTP = true })
	const slots = 5
	addr, srv := serveWithLimitsSrv(t, v, func(c *Config) { c.MaxConns = slots; c.BodyTimeout = time.Minute })
	busy := slowRequest(t, addr, "POST", "/api/validate") // in use until it sends the rest of its body
	// The server marks a connection idle once it has sent the response,
	// which the client may read first: a loaded machine could run the
	// client's next dial before that mark, and the limiter would then
	// close another connection than the oldest (it failed CI once so).
	// Each connection is waited for until the server counts it idle.
	idleOnServer := func(want int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d idle connections on the server", want), func() bool {
			srv.httpMu.Lock()
			l := srv.limiter
			srv.httpMu.Unlock()
			return l != nil && l.idleConns() == want
		})
	}
	var idle []net.Conn
	for i := 0; i < 3*slots; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Generous: at the cap, each is served once an idle one is closed.
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if err := getHealth(c, addr); err != nil {
			t.Fatalf("keep-alive connection %d beside %d idle ones (cap %d): %v", i, len(idle), slots, err)
		}
		idle = append(idle, c)                // kept open by the client: idle on the server
		idleOnServer(min(len(idle), slots-1)) // all but the busy one's slot
	}
	// The oldest idle connections were closed by the server (EOF), the
	// newest are still open.
	_ = idle[0].SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the oldest idle connection: %v, want EOF (closed to make room)", err)
	}
	if err := getHealth(idle[len(idle)-1], addr); err != nil {
		t.Errorf("the newest idle connection: %v", err)
	}
	// The connection in use was not closed: it finishes its request.
	_ = busy.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(busy, strings.Repeat(" ", 998)+"}"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the connection in use: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest && res.StatusCode != http.StatusOK {
		t.Errorf("the connection in use answered %d", res.StatusCode)
	}
}

// The compatibility routes that wait for a run outlast the ordinary
// read and write timeouts.
func TestLongRoutesOutlastTheTimeouts(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) {
		o.noHTTP = true
		o.llmOpts = []fakeopenai.Option{fakeopenai.WithLatency(2500 * time.Millisecond)}
	})
	addr := serveWithLimits(t, v, func(c *Config) { c.BodyTimeout = time.Second; c.WriteTimeout = time.Second })
	body, _ := json.Marshal(map[string]any{"graph": threeNodeGraph()})
	client := &http.Client{Timeout: 60 * time.Second}
	res, err := client.Post("http://"+addr+"/api/run", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(out), `"completed"`) {
		t.Fatalf("status %d: %s", res.StatusCode, out)
	}
}

// Graph decodes are bounded: with every slot taken, a request waits, then
// gets a 503 saying so; once a slot frees, it is served. (Not parallel: it
// holds the package's decode slots.)
func TestGraphDecodesAreBounded(t *testing.T) {
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	old := decodeWait
	decodeWait = 100 * time.Millisecond
	defer func() { decodeWait = old }()
	for i := 0; i < cap(decodeSlots); i++ {
		decodeSlots <- struct{}{}
	}
	r := v.request("POST", "/api/validate", map[string]any{"graph": threeNodeGraph()})
	for i := 0; i < cap(decodeSlots); i++ {
		<-decodeSlots
	}
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "too many graphs") {
		t.Fatalf("with every slot taken: %d %s", r.status, r.body)
	}
	v.must(http.StatusOK, "POST", "/api/validate", map[string]any{"graph": threeNodeGraph()}, nil)
}
