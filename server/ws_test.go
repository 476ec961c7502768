package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchyard/switchyard/engine"
)

// TestWSReplayThenLiveNoGaps connects watchers at random moments (with
// random after values) while the run keeps emitting: every watcher gets
// each event after its after exactly once, in order, then a normal close.
func TestWSReplayThenLiveNoGaps(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	id := createRawRun(t, v.st, engine.StatusRunning)
	emitEvents(v.st, id, 0, 300, "early")

	const total = 4000
	emitted := make(chan struct{})
	go func() {
		defer close(emitted)
		for seq := int64(300); seq < total; seq += 50 {
			emitEvents(v.st, id, seq, 50, "live")
			time.Sleep(time.Millisecond)
		}
	}()

	const watchers = 12
	type result struct {
		after int64
		evs   []engine.Event
		err   error
	}
	results := make([]result, watchers)
	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range watchers {
		after := int64(rng.IntN(600))
		delay := time.Duration(rng.IntN(60)) * time.Millisecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(delay)
			c, _, err := v.dial(fmt.Sprintf("/api/runs/%s/ws?after=%d", id, after), nil)
			if err != nil {
				results[i] = result{after: after, err: err}
				return
			}
			defer c.Close()
			evs, err := readEvents(c, 30*time.Second)
			results[i] = result{after: after, evs: evs, err: err}
		}()
	}
	<-emitted
	finishRawRun(t, v.st, id, total)
	wg.Wait()
	for i, r := range results {
		if closeCode(r.err) != websocket.CloseNormalClosure {
			t.Fatalf("watcher %d: ended with %v, want a normal close", i, r.err)
		}
		checkSeqs(t, r.evs, r.after)
		if got, want := int64(len(r.evs)), total+1-r.after; got != want {
			t.Fatalf("watcher %d (after %d): %d events, want %d", i, r.after, got, want)
		}
		if last := r.evs[len(r.evs)-1]; last.Type != engine.EvRunStatus || last.Content != "completed" {
			t.Fatalf("watcher %d: last event %+v", i, last)
		}
	}
}

// TestWSReconnectWithAfter: a client that drops and reconnects with the
// last seq it saw loses nothing and gets nothing twice.
func TestWSReconnectWithAfter(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	id := createRawRun(t, v.st, engine.StatusRunning)
	emitEvents(v.st, id, 0, 200, "x")

	c := v.mustDial("/api/runs/" + id + "/ws?after=0")
	var got []engine.Event
	for len(got) < 120 {
		_, raw, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var ev engine.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	c.Close() // the connection drops

	emitEvents(v.st, id, 200, 100, "while away")
	last := got[len(got)-1].Seq
	c2 := v.mustDial(fmt.Sprintf("/api/runs/%s/ws?after=%d", id, last))
	done := make(chan struct{})
	var rest []engine.Event
	var err error
	go func() {
		defer close(done)
		rest, err = readEvents(c2, 30*time.Second)
	}()
	emitEvents(v.st, id, 300, 50, "after reconnect")
	finishRawRun(t, v.st, id, 350)
	<-done
	if closeCode(err) != websocket.CloseNormalClosure {
		t.Fatalf("second connection ended with %v", err)
	}
	all := append(got, rest...)
	checkSeqs(t, all, 0)
	if len(all) != 351 {
		t.Fatalf("%d events, want 351", len(all))
	}
}

// TestWSEndedRunReplaysAndCloses: watching a finished run replays its log
// and closes normally at once.
func TestWSEndedRunReplaysAndCloses(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var run runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": threeNodeGraph()}, &run)
	v.wait(run.RunID)
	var stored []engine.Event
	v.must(http.StatusOK, "GET", "/api/runs/"+run.RunID+"/events", nil, &stored)

	c := v.mustDial("/api/runs/" + run.RunID + "/ws")
	evs, err := readEvents(c, 30*time.Second)
	if closeCode(err) != websocket.CloseNormalClosure {
		t.Fatalf("ended with %v", err)
	}
	if len(evs) != len(stored) || len(evs) == 0 {
		t.Fatalf("%d events over the socket, %d stored", len(evs), len(stored))
	}
	checkSeqs(t, evs, 0)

	c = v.mustDial(fmt.Sprintf("/api/runs/%s/ws?after=%d", run.RunID, len(stored)))
	evs, err = readEvents(c, 30*time.Second)
	if closeCode(err) != websocket.CloseNormalClosure || len(evs) != 0 {
		t.Fatalf("after the last seq: %d events, %v", len(evs), err)
	}
}

// TestWSLiveRunThroughEngine follows a real engine run from its start.
func TestWSLiveRunThroughEngine(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var run runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &run)
	c := v.mustDial("/api/runs/" + run.RunID + "/ws")
	got := make(chan []engine.Event, 1)
	go func() {
		evs, _ := readEvents(c, 30*time.Second)
		got <- evs
	}()
	v.wait(run.RunID)
	v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/approvals/ok", map[string]any{"decision": "approve"}, nil)
	evs := <-got
	checkSeqs(t, evs, 0)
	types := map[string]int{}
	for _, ev := range evs {
		types[ev.Type]++
	}
	if types[engine.EvWaitInput] != 1 || types[engine.EvInputReceived] != 1 || types[engine.EvLLMResponse] != 2 {
		t.Fatalf("event types %v", types)
	}
	if last := evs[len(evs)-1]; last.Content != "completed" {
		t.Fatalf("last event %+v", last)
	}
}

func TestWSHandshakeErrors(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	cases := []struct {
		path   string
		status int
	}{
		{"/api/runs/" + newID() + "/ws", http.StatusNotFound},
		{"/api/runs/zzz/ws", http.StatusBadRequest},
		{"/api/runs/" + newID() + "/ws?after=x", http.StatusBadRequest},
	}
	for _, tc := range cases {
		_, res, err := v.dial(tc.path, nil)
		if err == nil || res == nil || res.StatusCode != tc.status {
			t.Errorf("%s: %v, status %v, want %d", tc.path, err, res, tc.status)
		}
	}
	// Not a websocket request at all.
	id := createRawRun(t, v.st, engine.StatusRunning)
	if r := v.request("GET", "/api/runs/"+id+"/ws", nil); r.status != http.StatusBadRequest {
		t.Errorf("plain GET: %d %s", r.status, r.body)
	}
}

// sndbufListener gives accepted connections a small send buffer, so a
// client that reads slowly backs the server up quickly.
type sndbufListener struct {
	net.Listener
	size int
}

func (l sndbufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(l.size)
	}
	return c, err
}

// smallReadDialer dials with a small receive buffer, so the server's
// writes back up soon when the client reads slowly.
var smallReadDialer = &websocket.Dialer{
	NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(32 << 10)
		}
		return c, err
	},
	HandshakeTimeout: 10 * time.Second,
}

// TestWSSlowClientDisconnected: a client that reads too slowly is closed
// with 4000 and a reason naming the seq to resume after; it reconnects
// and loses nothing; a fast client of the same run is unaffected.
func TestWSSlowClientDisconnected(t *testing.T) {
	t.Parallel()
	// The backlog allowed (256 KiB, ~250 events) is ample for a client that
	// reads as fast as it can, not for one that sleeps between messages.
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.wsBuffer = 256 << 10; o.noHTTP = true })
	ts := httptest.NewUnstartedServer(v.srv.Handler())
	ts.Listener = sndbufListener{Listener: ts.Listener, size: 16 << 10}
	ts.Start()
	t.Cleanup(ts.Close)
	v.url = ts.URL

	id := createRawRun(t, v.st, engine.StatusRunning)
	const total = 2000
	content := strings.Repeat("x", 1<<10)

	// The fast client reads as fast as it can; on a machine starved of CPU
	// even it may fall behind now and then, and then does what a real
	// client does: reconnects after the last seq it has. What must hold is
	// that it gets every event once, in order.
	fastDone := make(chan error, 1)
	var fastEvs []engine.Event
	var fastReconnects int
	go func() {
		for {
			c, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws%s/api/runs/%s/ws?after=%d",
				strings.TrimPrefix(v.url, "http"), id, len(fastEvs)), nil)
			if err != nil {
				fastDone <- err
				return
			}
			more, err := readEvents(c, 60*time.Second)
			fastEvs = append(fastEvs, more...)
			if closeCode(err) != CloseTooSlow || fastReconnects >= 50 {
				fastDone <- err
				return
			}
			fastReconnects++
		}
	}()

	wsURL := "ws" + strings.TrimPrefix(v.url, "http") + "/api/runs/" + id + "/ws"
	slow, _, err := smallReadDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()

	go func() {
		// The run emits steadily, in many commits: a checkpoint after each
		// group of 10 is a barrier that commits it on its own. (Leaving
		// the grouping to the writer made the test flaky: one stall could
		// put most events in one commit, which a client whose queue is
		// empty always accepts.)
		hdr := &engine.Run{ID: id, Kind: engine.KindGraph, Status: engine.StatusRunning,
			PendingApprovals: []engine.PendingApproval{}}
		for seq := int64(0); seq < total; seq += 10 {
			emitEvents(v.st, id, seq, 10, content)
			hdr.UpdatedAt = time.Now().UTC()
			if err := v.st.Checkpoint(context.Background(), hdr, nil); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
		finishRawRun(t, v.st, id, total)
	}()

	var slowEvs []engine.Event
	var slowErr error
	for {
		_ = slow.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, raw, err := slow.ReadMessage()
		if err != nil {
			slowErr = err
			break
		}
		var ev engine.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		slowEvs = append(slowEvs, ev)
		time.Sleep(3 * time.Millisecond) // a slow reader
	}
	var ce *websocket.CloseError
	if !asCloseErr(slowErr, &ce) || ce.Code != CloseTooSlow {
		t.Fatalf("slow client ended with %v after %d events, want close %d", slowErr, len(slowEvs), CloseTooSlow)
	}
	checkSeqs(t, slowEvs, 0)
	last := int64(len(slowEvs))
	if want := fmt.Sprintf("after=%d", last); !strings.Contains(ce.Text, want) {
		t.Fatalf("close reason %q does not say %q", ce.Text, want)
	}
	if last >= total {
		t.Fatalf("the slow client got everything (%d): it was not slow", last)
	}

	// It reconnects where it left off and gets the rest. While the run
	// still streams, a catching-up client may be told to reconnect again;
	// like a real client it does, with the last seq it saw.
	var rest []engine.Event
	for attempt := 0; ; attempt++ {
		c2 := v.mustDial(fmt.Sprintf("/api/runs/%s/ws?after=%d", id, last+int64(len(rest))))
		more, err := readEvents(c2, 60*time.Second)
		rest = append(rest, more...)
		if closeCode(err) == websocket.CloseNormalClosure {
			break
		}
		if closeCode(err) != CloseTooSlow || attempt > 20 {
			t.Fatalf("reconnected client ended with %v", err)
		}
	}
	checkSeqs(t, append(slowEvs, rest...), 0)
	if int64(len(slowEvs)+len(rest)) != total+1 {
		t.Fatalf("%d + %d events, want %d", len(slowEvs), len(rest), total+1)
	}

	if err := <-fastDone; closeCode(err) != websocket.CloseNormalClosure {
		t.Fatalf("fast client ended with %v after %d events", err, len(fastEvs))
	}
	checkSeqs(t, fastEvs, 0)
	if len(fastEvs) != total+1 {
		t.Fatalf("fast client got %d events, want %d", len(fastEvs), total+1)
	}
	if fastReconnects > 0 {
		t.Logf("the fast client fell behind %d time(s) (a loaded machine) and caught up", fastReconnects)
	}
}

func asCloseErr(err error, ce **websocket.CloseError) bool {
	c, ok := err.(*websocket.CloseError)
	if ok {
		*ce = c
	}
	return ok
}

// TestWSHundredWatchers: 100 concurrent watchers of one busy run all get
// every event in order.
func TestWSHundredWatchers(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	id := createRawRun(t, v.st, engine.StatusRunning)
	const watchers, total = 100, 1500
	conns := make([]*websocket.Conn, watchers)
	for i := range conns {
		conns[i] = v.mustDial("/api/runs/" + id + "/ws")
	}
	waitFor(t, "100 subscribers", func() bool { n, _ := v.srv.hub.subscriberCounts(); return n == watchers })
	waitFor(t, "the metrics to count 100 run watchers", func() bool {
		return strings.Contains(string(v.must(http.StatusOK, "GET", "/metrics", nil, nil).body),
			`switchyard_websocket_clients{stream="run"} 100`)
	})
	var wg sync.WaitGroup
	errs := make([]error, watchers)
	counts := make([]int, watchers)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			evs, err := readEvents(c, 60*time.Second)
			counts[i] = len(evs)
			if closeCode(err) != websocket.CloseNormalClosure {
				errs[i] = fmt.Errorf("watcher %d: %v", i, err)
				return
			}
			for j, ev := range evs {
				if ev.Seq != int64(j+1) {
					errs[i] = fmt.Errorf("watcher %d: event %d has seq %d", i, j, ev.Seq)
					return
				}
			}
		}()
	}
	for seq := int64(0); seq < total; seq += 100 {
		emitEvents(v.st, id, seq, 100, "tick")
	}
	finishRawRun(t, v.st, id, total)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Log(grepLines(v.logs.String(), "websocket"))
			t.Fatal(err)
		}
		if counts[i] != total+1 {
			t.Fatalf("watcher %d got %d events", i, counts[i])
		}
	}
	waitFor(t, "watchers to unsubscribe", func() bool { n, _ := v.srv.hub.subscriberCounts(); return n == 0 })
}

// TestWSStatusStream: /api/ws reports each run's status changes.
func TestWSStatusStream(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := v.mustDial("/api/ws")
	waitFor(t, "the status subscriber", func() bool { _, n := v.srv.hub.subscriberCounts(); return n == 1 })
	var run runJSON
	v.must(http.StatusCreated, "POST", "/api/runs", map[string]any{"graph": approvalGraph()}, &run)
	v.wait(run.RunID)
	v.must(http.StatusOK, "POST", "/api/runs/"+run.RunID+"/approvals/ok", map[string]any{"decision": "approve"}, nil)
	v.wait(run.RunID)

	var seen []string
	for !contains(seen, "completed") {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		var m statusMsg
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("after %v: %v", seen, err)
		}
		if m.RunID != run.RunID {
			continue
		}
		s := string(m.Status)
		if m.WaitingForInput {
			s += "+waiting"
		}
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
	}
	want := []string{"pending", "running", "paused+waiting", "running", "completed"}
	// pending may be coalesced with running in one commit.
	if got := strings.Join(seen, ","); got != strings.Join(want, ",") && got != strings.Join(want[1:], ",") {
		t.Fatalf("status changes %v, want %v", seen, want)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestWSKeepaliveAndReadLimit: clients that answer pings stay; clients
// that stop reading are dropped; oversized client messages close the
// connection with 1009.
func TestWSKeepaliveAndReadLimit(t *testing.T) {
	t.Parallel()
	// The server reads with a deadline of pongWait, renewed by each pong.
	// pongWait is generous (a starved machine may answer a ping seconds
	// late); the test outlives it many pings over, so only renewals can
	// keep the client connected.
	const ping, pongWait = 500 * time.Millisecond, 10 * time.Second
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.ping = ping; o.pongWait = pongWait })
	id := createRawRun(t, v.st, engine.StatusRunning)

	// A reading client answers pings and stays connected.
	live := v.mustDial("/api/runs/" + id + "/ws")
	var pings atomic.Int32
	live.SetPingHandler(func(data string) error {
		pings.Add(1)
		return live.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(30*time.Second))
	})
	dropped := make(chan error, 1)
	go func() {
		_ = live.SetReadDeadline(time.Now().Add(5 * time.Minute))
		_, _, err := live.ReadMessage()
		dropped <- err
	}()
	// Pings answered for longer than pongWait: the client outlived the
	// server's first read deadline because its pongs renewed it.
	start := time.Now()
	for deadline := time.Now().Add(2 * time.Minute); pings.Load() < 3 || time.Since(start) < pongWait+2*ping; {
		select {
		case err := <-dropped:
			t.Fatalf("a reading client was dropped after %d pings: %v", pings.Load(), err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pings in two minutes, want 3 over more than %s", pings.Load(), pongWait)
		}
	}
	if n, _ := v.srv.hub.subscriberCounts(); n != 1 {
		t.Fatalf("%d run subscribers with the reading client connected, want 1", n)
	}
	live.Close()
	<-dropped

	// A client that never reads never answers pings: the server drops it.
	silent := v.mustDial("/api/runs/" + id + "/ws")
	waitFor(t, "the silent client to be dropped", func() bool {
		n, _ := v.srv.hub.subscriberCounts()
		return n == 0
	})
	_ = silent.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		if _, _, err := silent.ReadMessage(); err != nil {
			if isTimeout(err) {
				t.Fatal("the silent client's connection is still open")
			}
			break
		}
	}

	// The oversized message: this client writes nothing after it (no
	// pong, no close echo). The server closes a second after its 1009
	// without an answer; a write of a client slower than that (a loaded
	// machine) then met a reset, and gorilla reported that write's
	// "broken pipe" instead of the close frame already received.
	big := v.mustDial("/api/runs/" + id + "/ws")
	big.SetPingHandler(func(string) error { return nil })
	big.SetCloseHandler(func(int, string) error { return nil })
	if err := big.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("a", 10<<10))); err != nil {
		t.Logf("writing the oversized message: %v (the server may stop reading it)", err)
	}
	_ = big.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, _, err := big.ReadMessage()
	if closeCode(err) != websocket.CloseMessageTooBig {
		t.Fatalf("oversized message: %v, want close 1009", err)
	}
}

// stallCloseListener's connections hold back the server's close frame
// for stall, as a network whose buffers are full would (the write still
// honours its deadline).
type stallCloseListener struct {
	net.Listener
	stall time.Duration
}

func (l stallCloseListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallCloseConn{Conn: c, stall: l.stall}, nil
}

type stallCloseConn struct {
	net.Conn
	stall    time.Duration
	mu       sync.Mutex
	deadline time.Time
}

func (c *stallCloseConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallCloseConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *stallCloseConn) Write(p []byte) (int, error) {
	if len(p) > 0 && p[0] == 0x80|websocket.CloseMessage {
		c.mu.Lock()
		deadline := c.deadline
		c.mu.Unlock()
		if !deadline.IsZero() && time.Until(deadline) < c.stall {
			time.Sleep(time.Until(deadline))
			return 0, os.ErrDeadlineExceeded
		}
		time.Sleep(c.stall)
	}
	return c.Conn.Write(p)
}

// TestWSCloseFrameWaitsLikeAnyWrite: the close frame that ends a stream
// may wait for the network as long as an event may (the write timeout):
// a client that is behind but reading gets every event and a normal
// close, not an abnormal closure (1006). Under load, closes that gave up
// after closeTimeout (1s) made TestWSHundredWatchers fail that way.
func TestWSCloseFrameWaitsLikeAnyWrite(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.noHTTP = true; o.writeLimit = time.Minute })
	ts := httptest.NewUnstartedServer(v.srv.Handler())
	ts.Listener = stallCloseListener{Listener: ts.Listener, stall: 2 * closeTimeout}
	ts.Start()
	t.Cleanup(ts.Close)
	v.url = ts.URL

	id := createRawRun(t, v.st, engine.StatusRunning)
	emitEvents(v.st, id, 0, 50, "x")
	finishRawRun(t, v.st, id, 50)
	evs, err := readEvents(v.mustDial("/api/runs/"+id+"/ws"), time.Minute)
	if closeCode(err) != websocket.CloseNormalClosure {
		t.Fatalf("ended with %v after %d events, want a normal close", err, len(evs))
	}
	checkSeqs(t, evs, 0)
	if len(evs) != 51 {
		t.Fatalf("%d events, want 51", len(evs))
	}
}
