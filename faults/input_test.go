//go:build linux

package faults

// Bad input (issue 8): malformed, huge and deeply nested bodies, enormous
// and broken graphs, garbage on websockets and thousands of idle
// websockets get a clear 4xx or close — never a crash — and memory stays
// bounded.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
)

// wantAPIError asserts a JSON error answer with the given status and code
// whose message mentions every part.
func wantAPIError(t *testing.T, what string, code int, body []byte, wantCode int, errCode string, parts ...string) apiErr {
	t.Helper()
	var e apiErr
	if code != wantCode {
		t.Errorf("%s: HTTP %d, want %d: %s", what, code, wantCode, truncate(string(body), 300))
		return e
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Errorf("%s: not a JSON error body (%v): %s", what, err, truncate(string(body), 300))
		return e
	}
	if errCode != "" && e.Error.Code != errCode {
		t.Errorf("%s: error code %q, want %q (%s)", what, e.Error.Code, errCode, e.Error.Message)
	}
	errContains(t, what, e.Error.Message, parts...)
	return e
}

// TestBadBodies sends malformed, huge and deeply nested request bodies.
func TestBadBodies(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.start()
	base := p.baseline(t)

	deepArrays := `{"graph":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`
	deepObjects := `{"graph":` + strings.Repeat(`{"a":`, 50_000) + "1" + strings.Repeat("}", 50_000) + `}`
	deepInData := `{"graph":{"nodes":[{"id":"s","type":"start","data":{"deep":` + strings.Repeat("[", 20_000) +
		strings.Repeat("]", 20_000) + `}}],"edges":[]}}`
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
		parts                    []string
	}{
		{"truncated object", "POST", "/api/runs", `{"graph": {"nodes": [`, 400, "bad_request", []string{"line 1"}},
		{"not JSON", "POST", "/api/runs", `nope`, 400, "bad_request", []string{"invalid JSON"}},
		{"empty body", "POST", "/api/runs", ``, 400, "bad_request", []string{"empty"}},
		{"wrong type", "POST", "/api/runs", `[]`, 400, "bad_request", nil},
		{"nodes not a list", "POST", "/api/runs", `{"graph": {"nodes": 5, "edges": []}}`, 400, "bad_request", []string{"graph"}},
		{"trailing data", "POST", "/api/runs", `{"graph": {"nodes": [], "edges": []}} {"x": 1}`, 400, "bad_request", []string{"after the top-level value"}},
		{"binary garbage", "POST", "/api/runs", "\xff\xfe\x00\x01garbage\x00", 400, "bad_request", nil},
		{"graph and workflowId", "POST", "/api/runs", `{"graph": {"nodes": [], "edges": []}, "workflowId": "x"}`, 400, "bad_request", []string{"exactly one"}},
		{"path in workflowId", "POST", "/api/runs", `{"workflowId": "../../etc/passwd"}`, 400, "bad_request", []string{"workflowId"}},
		{"null graph", "POST", "/api/validate", `{"graph": null}`, 400, "bad_request", []string{"graph is required"}},
		{"graph a string", "POST", "/api/normalize", `{"graph": "nodes"}`, 400, "bad_request", []string{"graph"}},
		{"workflow name a number", "POST", "/api/workflows", `{"name": 5}`, 400, "bad_request", []string{"name"}},
		{"bad decision body", "POST", "/api/runs/0123abcd/approvals/ok", `{"decision": `, 400, "bad_request", nil},
		{"bad run id", "GET", "/api/runs/..%2f..%2fetc/events", ``, 400, "", nil},
		{"deeply nested arrays", "POST", "/api/validate", deepArrays, 400, "bad_request", []string{"depth"}},
		{"deeply nested objects", "POST", "/api/runs", deepObjects, 400, "bad_request", []string{"depth"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.body != "" {
				body = []byte(c.body)
			}
			code, data, err := p.do(c.method, c.path, body)
			if err != nil {
				t.Fatalf("%s %s: %v", c.method, c.path, err)
			}
			if c.code == "" {
				if code < 400 || code > 499 {
					t.Errorf("HTTP %d, want a 4xx: %s", code, truncate(string(data), 200))
				}
				return
			}
			wantAPIError(t, c.name, code, data, c.status, c.code, c.parts...)
		})
	}

	// Nesting the JSON decoder accepts (under its depth limit), in data the
	// server keeps but does not read: a clear answer, either way.
	t.Run("nested data kept", func(t *testing.T) {
		code, data, err := p.do("POST", "/api/validate", []byte(deepInData))
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusOK && code != http.StatusBadRequest {
			t.Fatalf("HTTP %d: %s", code, truncate(string(data), 300))
		}
	})

	// Over the 10 MiB limit: with a Content-Length, and streamed without one.
	big := bytes.Repeat([]byte(" "), 11<<20)
	copy(big, `{"graph":`)
	for _, path := range []string{"/api/runs", "/api/validate", "/api/workflows"} {
		t.Run("11 MiB to "+path, func(t *testing.T) {
			code, data, err := p.do("POST", path, big)
			if err != nil {
				t.Fatal(err)
			}
			wantAPIError(t, "sized body", code, data, http.StatusRequestEntityTooLarge, "payload_too_large", "larger than")
			// Chunked: the limit trips while reading.
			req, _ := http.NewRequest("POST", p.base+path, io.MultiReader(bytes.NewReader(big)))
			req.Header.Set("Content-Type", "application/json")
			req.ContentLength = -1
			resp, err := h.http.Do(req)
			if err != nil {
				t.Fatalf("chunked: %v", err)
			}
			data, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			wantAPIError(t, "chunked body", resp.StatusCode, data, http.StatusRequestEntityTooLarge, "payload_too_large", "larger than")
		})
	}
	p.healthy(t)
	u := p.settled(t, base, "after bad bodies")
	t.Logf("peak RSS after the bad bodies: %.1f MiB", float64(u.hwmKB)/1024)
}

// bigGraph is a chain start -> n-1 agents, as compact JSON (under 10 MiB
// for n = 100,000); lastType replaces the last node's type.
func bigGraph(n int, lastType string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"graph":{"nodes":[{"id":"s","type":"start","data":{"initialInput":"x"}}`)
	for i := 1; i < n; i++ {
		typ := "agent"
		if i == n-1 && lastType != "" {
			typ = lastType
		}
		fmt.Fprintf(&b, `,{"id":"%x","type":"%s"}`, i, typ)
	}
	b.WriteString(`],"edges":[{"id":"e1","source":"s","target":"1"}`)
	for i := 2; i < n; i++ {
		fmt.Fprintf(&b, `,{"id":"e%x","source":"%x","target":"%x"}`, i, i-1, i)
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

// TestHugeGraph validates and starts graphs at the node limit, and refuses
// larger ones up front, naming the limit.
func TestHugeGraph(t *testing.T) {
	t.Parallel()
	n := graph.MaxNodes
	h := newHarness(t)
	p := h.start()
	base := p.baseline(t)

	over := bigGraph(100_000, "")
	code, data, err := p.do("POST", "/api/validate", over)
	if err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, "100,000 nodes", code, data, http.StatusRequestEntityTooLarge, "payload_too_large", "the limit is 10000")

	body := bigGraph(n, "")
	t.Logf("%d-node graph: %.1f MiB of JSON", n, float64(len(body))/(1<<20))
	start := time.Now()
	code, data, err = p.do("POST", "/api/validate", body)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("POST /api/validate: %v", err)
	}
	if code != http.StatusOK {
		t.Fatalf("POST /api/validate: HTTP %d: %s", code, truncate(string(data), 300))
	}
	var res struct {
		Valid    *bool           `json:"valid"`
		Problems []graph.Problem `json:"problems"`
	}
	if err := json.Unmarshal(data, &res); err != nil || res.Valid == nil {
		t.Fatalf("validate answer: %v: %s", err, truncate(string(data), 300))
	}
	if len(res.Problems) > graph.MaxProblems+1 {
		t.Errorf("%d problems listed; at most %d and a summary", len(res.Problems), graph.MaxProblems)
	}
	u := p.usage(t)
	t.Logf("validate %d nodes: %s, valid=%v, %d problems, %.1f MiB answer; server peak RSS %.1f MiB",
		n, took.Round(time.Millisecond), *res.Valid, len(res.Problems), float64(len(data))/(1<<20), float64(u.hwmKB)/1024)
	if took > time.Minute {
		t.Errorf("validating %d nodes took %s", n, took)
	}

	// The same graph with an unknown node type at its end: refused, naming it.
	last := fmt.Sprintf("%x", n-1)
	start = time.Now()
	code, data, err = p.do("POST", "/api/runs", bigGraph(n, "teleport"))
	if err != nil {
		t.Fatal(err)
	}
	e := wantAPIError(t, "huge invalid run", code, data, http.StatusBadRequest, "invalid_graph", last, "teleport")
	found := false
	for _, pr := range e.Error.Problems {
		found = found || pr.NodeID == last && pr.Code == graph.CodeUnknownNodeType
	}
	if !found {
		t.Errorf("no unknown_node_type problem on node %s among %d problems", last, len(e.Error.Problems))
	}
	t.Logf("start refused in %s", time.Since(start).Round(time.Millisecond))

	u = p.usage(t)
	const maxPeakMiB = 1024
	if u.hwmKB > maxPeakMiB<<10 {
		t.Errorf("server peak RSS %.1f MiB with %d-node graphs (bound %d MiB)", float64(u.hwmKB)/1024, n, maxPeakMiB)
	}
	p.healthy(t)
	p.settled(t, base, "after the huge graphs")
}

// TestBadGraphs sends graphs with unknown node types and handles,
// self-loops and other structural errors: validation names the node or
// edge, and starting them is refused with the same problems (or, for a
// self-loop, which is legal, the run ends within its visit cap).
func TestBadGraphs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.start()
	base := p.baseline(t)
	start := func() *gbuild {
		b := &gbuild{}
		b.node("s", graph.TypeStart, graph.NodeData{InitialInput: "x"})
		return b
	}
	longID := strings.Repeat("n", 100_000)
	cases := []struct {
		name     string
		g        func() *graph.Graph
		code     string
		node     string
		edge     string
		fragment string
	}{
		{"unknown node type", func() *graph.Graph {
			b := start().node("t", "teleport", graph.NodeData{}).edge("s", graph.HandleOutput, "t")
			return &b.g
		}, graph.CodeUnknownNodeType, "t", "", "teleport"},
		{"unknown if handle", func() *graph.Graph {
			b := start().node("i", graph.TypeIf, graph.NodeData{Conditions: []graph.Condition{{Operator: graph.OpEqual, Value: "x"}}}).
				node("a", graph.TypeAgent, agent("bad", "a")).edge("s", graph.HandleOutput, "i").edge("i", "condition-7", "a")
			return &b.g
		}, graph.CodeInvalidHandle, "", "e2", "condition-7"},
		{"unknown approval handle", func() *graph.Graph {
			b := start().node("ok", graph.TypeApproval, graph.NodeData{}).node("a", graph.TypeAgent, agent("bad", "a")).
				edge("s", graph.HandleOutput, "ok").edge("ok", "maybe", "a")
			return &b.g
		}, graph.CodeInvalidHandle, "", "e2", "maybe"},
		{"edge to a missing node", func() *graph.Graph {
			b := start().edge("s", graph.HandleOutput, "ghost")
			return &b.g
		}, graph.CodeMissingNode, "", "e1", "ghost"},
		{"subagent self-loop", func() *graph.Graph {
			a := agent("bad", "a")
			a.Tools = &graph.Tools{Subagents: true}
			b := start().node("a", graph.TypeAgent, a).edge("s", graph.HandleOutput, "a").edge("a", graph.HandleSubagent, "a")
			return &b.g
		}, graph.CodeSubagentSelf, "a", "", "own subagent"},
		{"duplicate node ids", func() *graph.Graph {
			b := start().node("a", graph.TypeAgent, agent("bad", "a")).node("a", graph.TypeAgent, agent("bad", "a")).
				edge("s", graph.HandleOutput, "a")
			return &b.g
		}, graph.CodeDuplicateNodeID, "a", "", ""},
		{"no start", func() *graph.Graph {
			b := &gbuild{}
			b.node("a", graph.TypeAgent, agent("bad", "a"))
			return &b.g
		}, graph.CodeNoStart, "", "", "start"},
	}
	// A 100 KB node id is refused before validation (a short 413 naming the
	// limit, not a problem list that repeats the id).
	t.Run("100 KB node id", func(t *testing.T) {
		b := start().node(longID, "mystery", graph.NodeData{}).edge("s", graph.HandleOutput, longID)
		for _, path := range []string{"/api/validate", "/api/runs"} {
			code, data, err := p.do(http.MethodPost, path, map[string]any{"graph": &b.g})
			if err != nil {
				t.Fatal(err)
			}
			wantAPIError(t, path, code, data, http.StatusRequestEntityTooLarge, "payload_too_large", "ids may be at most 256")
			if len(data) > 1000 {
				t.Errorf("%s: a %d-byte answer to a long id", path, len(data))
			}
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.g()
			var res struct {
				Valid    bool            `json:"valid"`
				Problems []graph.Problem `json:"problems"`
			}
			p.must(t, http.MethodPost, "/api/validate", map[string]any{"graph": g}, http.StatusOK, &res)
			if res.Valid {
				t.Fatalf("validate says valid: %+v", res.Problems)
			}
			var hit *graph.Problem
			for i := range res.Problems {
				if res.Problems[i].Code == c.code {
					hit = &res.Problems[i]
				}
			}
			if hit == nil {
				t.Fatalf("no %s problem in %+v", c.code, res.Problems)
			}
			if c.node != "" && hit.NodeID != c.node {
				t.Errorf("problem names node %q, want %q", truncate(hit.NodeID, 20), truncate(c.node, 20))
			}
			if c.edge != "" && hit.EdgeID != c.edge {
				t.Errorf("problem names edge %q, want %q", hit.EdgeID, c.edge)
			}
			errContains(t, "problem message", hit.Message, c.fragment)
			code, data, err := p.do(http.MethodPost, "/api/runs", map[string]any{"graph": g})
			if err != nil {
				t.Fatal(err)
			}
			wantAPIError(t, "start", code, data, http.StatusBadRequest, "invalid_graph", c.fragment)
		})
	}

	// An execution self-loop is legal: the node runs again on its own
	// output until the visit cap ends the run, with an error naming it.
	t.Run("execution self-loop", func(t *testing.T) {
		b := start().node("a", graph.TypeAgent, agent("loop", "a")).edge("s", graph.HandleOutput, "a").edge("a", graph.HandleOutput, "a")
		code, data, err := p.do(http.MethodPost, "/api/validate", map[string]any{"graph": &b.g})
		if err != nil || code != http.StatusOK {
			t.Fatalf("validate: %d %v %s", code, err, data)
		}
		t.Logf("validate: %s", truncate(string(data), 300))
		code, data, err = p.do(http.MethodPost, "/api/runs", map[string]any{"graph": &b.g})
		if err != nil {
			t.Fatal(err)
		}
		if code == http.StatusBadRequest {
			wantAPIError(t, "start", code, data, http.StatusBadRequest, "invalid_graph", `"a"`)
			return
		}
		var rv runView
		if code != http.StatusCreated || json.Unmarshal(data, &rv) != nil {
			t.Fatalf("start: HTTP %d: %s", code, truncate(string(data), 300))
		}
		rv = p.waitRun(t, rv.RunID, time.Minute)
		calls := len(h.llm.callsOf("loop", "a"))
		t.Logf("self-loop run %s after %d LLM calls: %s", rv.Status, calls, rv.Error)
		if !rv.Status.Terminal() {
			t.Errorf("self-loop run is %s", rv.Status)
		}
		if rv.Status == engine.StatusFailed {
			errContains(t, "run error", rv.Error, `"a"`)
		}
		if calls > 25 {
			t.Errorf("the self-loop called the LLM %d times, more than the visit cap (25)", calls)
		}
	})
	p.healthy(t)
	p.settled(t, base, "after the bad graphs")
}

// TestWebsocketGarbage sends binary garbage over websockets, broken frames
// after the upgrade and non-HTTP bytes to the port.
func TestWebsocketGarbage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.start()
	base := p.baseline(t)
	ctx := context.Background()
	garbage := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return b
	}
	// expectClosed reads until the server ends the connection.
	expectClosed := func(t *testing.T, c *websocket.Conn) error {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("the server kept the connection open after the garbage")
				}
				return err
			}
		}
	}

	t.Run("small binary messages are ignored", func(t *testing.T) {
		c, err := p.dial(ctx, "/api/ws")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := 0; i < 20; i++ {
			if err := c.WriteMessage(websocket.BinaryMessage, garbage(200)); err != nil {
				t.Fatal(err)
			}
			if err := c.WriteMessage(websocket.TextMessage, []byte("{not json")); err != nil {
				t.Fatal(err)
			}
		}
		// Still a working status stream: a new run shows up on it.
		id := p.startGraph(t, chainGraph("ws", "a"), "")
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		for {
			var m struct {
				RunID string `json:"runId"`
			}
			if err := c.ReadJSON(&m); err != nil {
				t.Fatalf("status stream after garbage: %v", err)
			}
			if m.RunID == id {
				break
			}
		}
		p.waitRun(t, id, time.Minute)
	})
	t.Run("oversized binary message closes", func(t *testing.T) {
		c, err := p.dial(ctx, "/api/ws")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The server may close while the message is still being written.
		if err := c.WriteMessage(websocket.BinaryMessage, garbage(64<<10)); err != nil {
			t.Logf("closed while writing: %v", err)
			return
		}
		err = expectClosed(t, c)
		t.Logf("closed: %v", err)
	})
	t.Run("broken frames on a run stream close", func(t *testing.T) {
		id := p.startGraph(t, pauseGraph("wsg"), "")
		p.waitRun(t, id, time.Minute)
		c, err := p.dial(ctx, "/api/runs/"+id+"/ws")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Unmasked frames with reserved opcodes and bits: a protocol error.
		if _, err := c.UnderlyingConn().Write(append([]byte{0xff, 0x7f}, garbage(4096)...)); err != nil {
			t.Fatal(err)
		}
		err = expectClosed(t, c)
		t.Logf("closed: %v", err)
	})
	t.Run("non-HTTP bytes on the port", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			conn, err := net.DialTimeout("tcp", p.addr, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			_ = conn.SetDeadline(time.Now().Add(time.Minute))
			_, _ = conn.Write(append(garbage(1024), "\r\n\r\n"...))
			resp, _ := io.ReadAll(conn)
			conn.Close()
			if len(resp) > 0 && !bytes.HasPrefix(resp, []byte("HTTP/1.1 400")) {
				t.Errorf("answer to garbage: %q", truncate(string(resp), 80))
			}
		}
	})
	t.Run("plain GET of a websocket endpoint", func(t *testing.T) {
		code, data, err := p.do(http.MethodGet, "/api/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		wantAPIError(t, "plain GET", code, data, http.StatusBadRequest, "bad_request", "websocket")
	})
	p.healthy(t)
	p.settled(t, base, "after websocket garbage")
}

// pauseGraph: start -> approval -> agent; pauses without calling the LLM.
func pauseGraph(key string) *graph.Graph {
	b := &gbuild{}
	b.node("s", graph.TypeStart, graph.NodeData{InitialInput: "draft"}).
		node("ok", graph.TypeApproval, graph.NodeData{Prompt: "publish?"}).
		node("f", graph.TypeAgent, agent(key, "f")).
		edge("s", graph.HandleOutput, "ok").edge("ok", graph.HandleApprove, "f")
	return &b.g
}

// TestIdleWebsockets opens 2,000 idle websockets (status streams and run
// streams of a paused run): the server's memory stays bounded, it still
// answers, every status stream gets a new run's status, and closing them
// gives everything back.
func TestIdleWebsockets(t *testing.T) {
	t.Parallel()
	n := 2000
	if testing.Short() {
		n = 500
	}
	h := newHarness(t)
	p := h.start()
	base := p.baseline(t)
	paused := p.startGraph(t, pauseGraph("idle"), "")
	p.waitRun(t, paused, time.Minute)
	before := p.usage(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conns := make([]*websocket.Conn, n)
	var mu sync.Mutex
	var dialErrs []error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			path := "/api/ws"
			if i%5 == 4 {
				path = "/api/runs/" + paused + "/ws"
			}
			c, err := p.dial(ctx, path)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				dialErrs = append(dialErrs, err)
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	if len(dialErrs) > 0 {
		t.Fatalf("%d of %d websockets failed to connect, e.g. %v", len(dialErrs), n, dialErrs[0])
	}
	t.Logf("%d websockets open in %s", n, time.Since(start).Round(time.Millisecond))
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()

	// Every status stream gets the status of a run started now.
	var got atomic.Int64
	id := p.startGraph(t, chainGraph("idle", "a"), "")
	var rg sync.WaitGroup
	for i, c := range conns {
		if i%5 == 4 {
			continue
		}
		rg.Add(1)
		go func() {
			defer rg.Done()
			_ = c.SetReadDeadline(time.Now().Add(time.Minute))
			for {
				var m struct {
					RunID string `json:"runId"`
				}
				if err := c.ReadJSON(&m); err != nil {
					return
				}
				if m.RunID == id {
					got.Add(1)
					return
				}
			}
		}()
	}
	rg.Wait()
	if want := int64(n - n/5); got.Load() != want {
		t.Errorf("%d of %d status streams got the new run's status", got.Load(), want)
	}
	if rv := p.waitRun(t, id, time.Minute); rv.Status != engine.StatusCompleted {
		t.Errorf("run with %d websockets open: %s (%s)", n, rv.Status, rv.Error)
	}
	hstart := time.Now()
	p.healthy(t)
	healthTook := time.Since(hstart)
	open := p.usage(t)
	m := p.metrics(t)
	clients := m[`switchyard_websocket_clients{stream="status"}`] + m[`switchyard_websocket_clients{stream="run"}`]
	if int(clients) != n {
		t.Errorf("/metrics counts %v websocket clients, want %d", clients, n)
	}
	perConn := float64(open.rssKB-before.rssKB) / float64(n)
	t.Logf("%d idle websockets: %s (before: %s); %.1f KiB RSS and %.1f goroutines per connection; health answered in %s",
		n, open, before, perConn, float64(open.goroutines-before.goroutines)/float64(n), healthTook.Round(time.Millisecond))
	const maxPerConnKiB = 100
	if perConn > maxPerConnKiB {
		t.Errorf("%.1f KiB of RSS per idle websocket (bound %d KiB)", perConn, maxPerConnKiB)
	}
	if open.fds > before.fds+n+fdSlack {
		t.Errorf("%d open files with %d websockets (before %d)", open.fds, n, before.fds)
	}

	// Half leave politely, half just vanish.
	for i, c := range conns {
		if i%2 == 0 {
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		}
		c.Close()
		conns[i] = nil
	}
	p.healthy(t)
	p.settled(t, base, fmt.Sprintf("after closing %d websockets", n))
}
