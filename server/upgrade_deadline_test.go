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
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/graph"
)

// An Upgrade header on an ordinary route is no websocket: the body still
// has to arrive within the body timeout (it used to lift both deadlines,
// for any route and any client).
func TestUpgradeHeaderKeepsTheBodyDeadline(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken; o.noHTTP = true })
	addr := serveWithLimits(t, v, func(c *Config) { c.BodyTimeout = time.Second })
	for _, path := range []string{"/api/validate", "/api/ws", "/api/runs/" + newID() + "/ws"} {
		c := slowRequest(t, addr, "POST", path, "Authorization", "Bearer "+testToken,
			"Upgrade", "websocket", "Connection", "Upgrade")
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		got, err := io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("POST %s with Upgrade: websocket: the connection was still held after 60 s (body timeout 1 s)", path)
		}
		if !strings.HasPrefix(string(got), "HTTP/1.1 4") {
			t.Fatalf("POST %s: answer %q, want a 4xx", path, got)
		}
	}
}

// A client without the token gets its 401 and the connection closes: the
// server does not read (drain) the body it announced, however slowly it
// comes and whatever the headers say.
func TestUnauthenticatedConnectionClosesWithoutDrainingTheBody(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken; o.noHTTP = true })
	// Far longer than the test waits: only closing at once passes.
	addr := serveWithLimits(t, v, func(c *Config) { c.BodyTimeout = 10 * time.Minute })
	cases := []struct {
		name, method, path string
		hdr                []string
	}{
		{"plain", "POST", "/api/validate", nil},
		{"upgrade header", "POST", "/api/validate", []string{"Upgrade", "websocket", "Connection", "Upgrade"}},
		{"websocket route", "GET", "/api/ws", []string{"Upgrade", "websocket", "Connection", "Upgrade",
			"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := slowRequest(t, addr, tc.method, tc.path, tc.hdr...)
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			got, err := io.ReadAll(c)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server still held the connection after 60 s; it had answered %q", got)
			}
			if !strings.HasPrefix(string(got), "HTTP/1.1 401 ") {
				t.Fatalf("answer %q, want a 401", got)
			}
		})
	}
}

// The repro, scaled down: clients without the token that announce
// a body, claim an upgrade and trickle bytes take every connection slot
// and an authorized client still gets through.
func TestHostileUpgradesDoNotStarveAuthorizedClients(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken; o.noHTTP = true })
	const slots = 4
	addr := serveWithLimits(t, v, func(c *Config) { c.MaxConns = slots; c.BodyTimeout = 10 * time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 2*slots; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /api/validate HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n{", addr)
		go func() { // one byte now and then, as a slowloris does
			for ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/runs", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("an authorized request behind %d hostile connections (cap %d): %v", 2*slots, slots, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/runs: %d", res.StatusCode)
	}
}

// An event stream to a client that stops reading ends at the write
// deadline: the handler returns and frees the connection instead of
// waiting on the client forever.
func TestEventStreamWritesHaveADeadline(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noHTTP = true })
	addr := serveWithLimits(t, v, func(c *Config) { c.WSWriteTimeout = time.Second; c.Metrics = v.metrics })
	// Enough text that the kernel's buffers cannot take it all: four
	// agents each echo a 1 MiB prompt, and the final message repeats the log.
	b := newGraph().node("n1", graph.TypeStart, graph.NodeData{InitialInput: strings.Repeat("x", 1<<20)})
	prev := "n1"
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		b.node(id, graph.TypeAgent, graph.NodeData{AgentName: id, UserPrompt: "{{PREVIOUS_OUTPUT}}", Model: "gpt-5-mini"}).
			edge(prev, graph.HandleOutput, id)
		prev = id
	}
	body, err := json.Marshal(map[string]any{"graph": b.build()})
	if err != nil {
		t.Fatal(err)
	}
	// A small receive buffer, set before connecting so the window stays small.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /api/run-stream HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	// Not reading: the stream's writes block until their deadline.
	waitForLong(t, "the event stream's handler to give up on a client that does not read", func() bool {
		return strings.Contains(v.logs.String(), "path=/api/run-stream")
	})
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	got, _ := io.ReadAll(bufio.NewReader(c))
	if !strings.Contains(string(got), `"type":"start"`) {
		t.Fatalf("the stream did not start: %.200q", got)
	}
	if strings.Contains(string(got), `"type":"done"`) {
		t.Fatal("the stream was not cut: a write blocked on the client did not time out")
	}
}

// waitForLong is waitFor with a deadline for conditions that wait on a
// server-side timeout under a loaded machine.
func waitForLong(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
