package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// serveReal serves v's server on a real loopback listener (not httptest),
// so Shutdown is the real thing. It returns the Serve result channel.
func serveReal(t *testing.T, v *env) <-chan error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	v.url = "http://" + ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- v.srv.Serve(ln) }()
	return served
}

// TestGracefulShutdown: shutdown lets an in-flight request finish, closes
// websockets with 1001, answers long waits with the run's current state,
// refuses new connections, and leaves a running run resumable.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) {
		o.noHTTP = true
		o.llmOpts = []fakeopenai.Option{fakeopenai.WithLatency(time.Minute)} // agents "think" until shutdown
	})
	served := serveReal(t, v)

	// A run whose first agent is in the middle of an LLM call.
	var run runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": threeNodeGraph()}, &run)
	waitFor(t, "the LLM call", func() bool { return v.fake.InFlight() > 0 })

	// A compat client waiting for a run to pause or end.
	longWait := make(chan *response, 1)
	go func() {
		longWait <- v.request("POST", "/api/run", map[string]any{"graph": threeNodeGraph()})
	}()
	waitFor(t, "the second LLM call", func() bool { return v.fake.InFlight() > 1 })

	// A websocket watcher.
	ws := v.mustDial("/api/runs/" + run.RunID + "/ws")

	// An in-flight request: its handler is reading the body (the server
	// asked for it with 100 Continue) when shutdown begins.
	body := `{"name": "written during shutdown", "graph": {"nodes": [], "edges": []}}`
	conn, err := net.Dial("tcp", strings.TrimPrefix(v.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/workflows HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n",
		strings.TrimPrefix(v.url, "http://"), len(body))
	br := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("expected 100 Continue, got %q %v", line, err)
	}
	if line, _ := br.ReadString('\n'); line != "\r\n" {
		t.Fatalf("after 100 Continue: %q", line)
	}
	_ = conn.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(conn, body[:20]); err != nil {
		t.Fatal(err)
	}

	shutdownDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shutdownDone <- v.srv.Shutdown(ctx)
	}()

	// The websocket is closed with "going away".
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	err = nil
	for err == nil {
		_, _, err = ws.ReadMessage()
	}
	if closeCode(err) != websocket.CloseGoingAway {
		t.Fatalf("websocket ended with %v, want 1001", err)
	}

	// The long wait answers with the run's state as it is.
	lw := <-longWait
	if lw.status != http.StatusOK || !strings.Contains(string(lw.body), `"status":"running"`) {
		t.Fatalf("long wait: %d %s", lw.status, lw.body)
	}

	// New connections are refused once the listener is closed.
	waitFor(t, "the listener to close", func() bool {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(v.url, "http://"), time.Second)
		if err == nil {
			c.Close()
			return false
		}
		return true
	})
	select {
	case err := <-shutdownDone:
		t.Fatalf("shutdown returned (%v) while a request was in flight", err)
	default:
	}

	// The in-flight request completes.
	if _, err := io.WriteString(conn, body[20:]); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	resBody, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("in-flight request: %d %s", res.StatusCode, resBody)
	}
	if err := <-shutdownDone; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}

	// Closing the engine leaves the run running, for the next process.
	v.e.Close()
	hdr, err := v.st.GetRun(context.Background(), run.RunID)
	if err != nil || hdr.Status != engine.StatusRunning {
		t.Fatalf("after shutdown: %+v %v", hdr, err)
	}

	// The next process recovers it and finishes it.
	v.fake.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		r := fakeopenai.DefaultReply(req)
		r.Latency = -1
		return r
	})
	e2, err := engine.New(engine.Config{Store: v.st, ArtifactsRoot: t.TempDir(), LLM: mustLLM(t, v.fake)})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	took, err := e2.Recover(context.Background(), true)
	if err != nil || !contains(took, run.RunID) {
		t.Fatalf("recover: %v %v", took, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hdr, err = e2.Wait(ctx, run.RunID)
	if err != nil || hdr.Status != engine.StatusCompleted {
		t.Fatalf("recovered run: %+v %v", hdr, err)
	}
}

// TestShutdownRefusesNewWebsockets: once draining, upgrades get 503.
func TestShutdownRefusesNewWebsockets(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	id := createRawRun(t, v.st, engine.StatusRunning)
	v.srv.drain()
	_, res, err := v.dial("/api/runs/"+id+"/ws", nil)
	if err == nil || res == nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("upgrade while draining: %v %v", err, res)
	}
	var h map[string]any
	r := v.request("GET", "/api/health", nil)
	r.decode(t, &h)
	if r.status != http.StatusServiceUnavailable || h["status"] != "shutting_down" {
		t.Fatalf("health while draining: %d %v", r.status, h)
	}
}
