package llm

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// tlsFake serves the fake LLM over TLS (HTTP/2 when h2), holding each
// request until n have arrived: every call of a burst is in flight at
// once, however slow the machine. It counts connections and the requests
// that came over HTTP/2.
type tlsFake struct {
	srv          *httptest.Server
	conns, h2    atomic.Int64
	mu           sync.Mutex
	arrived      int
	all          chan struct{}
	n            int
	timedOutWait atomic.Bool
}

func startTLSFake(t testing.TB, h2 bool, n int) *tlsFake {
	t.Helper()
	f := &tlsFake{all: make(chan struct{}), n: n}
	fake := fakeopenai.New().Handler()
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			f.h2.Add(1)
		}
		f.mu.Lock()
		if f.arrived++; f.arrived == f.n {
			close(f.all)
		}
		f.mu.Unlock()
		select {
		case <-f.all:
		case <-time.After(time.Minute):
			f.timedOutWait.Store(true)
		}
		fake.ServeHTTP(w, r)
	}))
	f.srv.EnableHTTP2 = h2
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.conns.Add(1)
		}
	}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

// client is the default client's transport, trusting the test server.
func (f *tlsFake) client(t testing.TB) *Client {
	t.Helper()
	tr := newTransport(f.n)
	tr.TLSClientConfig = &tls.Config{RootCAs: f.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	c, err := New(Config{BaseURL: f.srv.URL + "/v1", APIKey: "x", Transport: tr, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func burst(t testing.TB, c *Client, n int) {
	t.Helper()
	req := Request{Messages: []Message{{Role: "user", Content: "hi"}}}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := c.Complete(context.Background(), req, func(string) {}, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// burstAllInFlight starts n calls together against a fresh TLS fake
// (HTTP/2 when h2) and fails unless all were in flight at once.
func burstAllInFlight(t *testing.T, h2 bool, n int) *tlsFake {
	t.Helper()
	f := startTLSFake(t, h2, n)
	burst(t, f.client(t), n)
	if f.timedOutWait.Load() {
		t.Fatalf("the %d calls were not all in flight at once", n)
	}
	return f
}

// TestDialGateBurstSharesHTTP2Connections: 200 calls started together
// against a cold HTTPS endpoint that speaks HTTP/2, all in flight at once,
// share a few connections. Without the gate net/http dialed one for
// nearly every call (170–297 TLS handshakes for these 200) and closed
// all but a few again.
func TestDialGateBurstSharesHTTP2Connections(t *testing.T) {
	const n = 200
	f := burstAllInFlight(t, true, n)
	if got := f.h2.Load(); got != n {
		t.Errorf("%d of %d calls came over HTTP/2", got, n)
	}
	// One connection carries them all once the server's settings (250
	// streams) are in; before that the client counts on 100, so a few
	// more may be dialed, dialGateWaiting at a time.
	if got := f.conns.Load(); got > 1+4*dialGateWaiting {
		t.Errorf("%d calls opened %d connections, want a few", n, got)
	}
}

// BenchmarkColdBurstHTTP2 is a 1,000-branch fan-out's first calls: 1,000
// calls started together, all in flight at once, against a fresh HTTPS
// endpoint that speaks HTTP/2 (the fake, in this process, so the CPU
// figures count both ends of the TLS handshakes); "no-gate" is net/http
// on its own. conns/burst is the connections opened.
func BenchmarkColdBurstHTTP2(b *testing.B) {
	const n = 1000
	for _, gate := range []bool{true, false} {
		name := "gate"
		if !gate {
			name = "no-gate"
		}
		b.Run(name, func(b *testing.B) {
			var conns int64
			for b.Loop() {
				b.StopTimer()
				f := startTLSFake(b, true, n)
				c := f.client(b)
				if !gate {
					tr := newTransport(n)
					tr.TLSClientConfig = &tls.Config{RootCAs: f.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
					var err error
					// A client of the caller's own is used as it is, ungated.
					c, err = New(Config{BaseURL: f.srv.URL + "/v1", APIKey: "x", HTTPClient: &http.Client{Transport: tr}, MaxAttempts: 1})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				burst(b, c, n)
				b.StopTimer()
				conns += f.conns.Load()
				f.srv.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(conns)/float64(b.N), "conns/burst")
		})
	}
}

// TestDialGateLeavesHTTP1HostsAlone: against an HTTPS endpoint that
// speaks only HTTP/1.1 every call needs its own connection, and the gate,
// once the first call has found that out, holds none of them back: all
// 50 are in flight at once, on 50 connections.
func TestDialGateLeavesHTTP1HostsAlone(t *testing.T) {
	const n = 50
	f := burstAllInFlight(t, false, n)
	if f.h2.Load() != 0 || f.conns.Load() != n {
		t.Errorf("%d HTTP/2 calls, %d connections: want 0 and one per call (%d)", f.h2.Load(), f.conns.Load(), n)
	}
}

// TestDialGateConnected: which held calls a call lets through once it has
// a connection (or failed before it had one).
func TestDialGateConnected(t *testing.T) {
	for _, tc := range []struct {
		name            string
		proto           int // the host's, before
		waiting, held   int
		got             int // what the ending call learned
		wantThrough     int
		wantProto       int
		wantWaitingLeft int
	}{
		{"first call finds HTTP/2: the next few go", gateUnknown, 1, 10, gateHTTP2, dialGateWaiting, gateHTTP2, dialGateWaiting},
		{"first call finds HTTP/1.1: all go", gateUnknown, 1, 10, gateHTTP1, 10, gateHTTP1, 10},
		{"first call failed: all go, as without a gate", gateUnknown, 1, 10, gateUnknown, 10, gateUnknown, 10},
		{"HTTP/2 host: one call connected, one goes", gateHTTP2, dialGateWaiting, 10, gateHTTP2, 1, gateHTTP2, dialGateWaiting},
		{"HTTP/2 host: a call failed, all go", gateHTTP2, dialGateWaiting, 10, gateUnknown, 10, gateHTTP2, dialGateWaiting - 1 + 10},
		{"nothing held", gateHTTP2, 2, 0, gateHTTP2, 0, gateHTTP2, 1},
		{"first call gave up: the next is the first", gateUnknown, 1, 10, gateGaveUp, 1, gateUnknown, 1},
		{"HTTP/2 host: a call gave up, one goes", gateHTTP2, dialGateWaiting, 10, gateGaveUp, 1, gateHTTP2, dialGateWaiting},
		{"HTTP/1.1 host: a held call gave up, all go", gateHTTP1, 1, 10, gateGaveUp, 10, gateHTTP1, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newDialGate(http.DefaultTransport)
			h := &gateHost{proto: tc.proto, waiting: tc.waiting}
			for range tc.held {
				h.held = append(h.held, make(chan struct{}))
			}
			chans := append([]chan struct{}(nil), h.held...)
			g.connected(h, tc.got)
			through := 0
			for i, ch := range chans {
				select {
				case <-ch:
					through++
					if i >= tc.wantThrough {
						t.Errorf("call %d let through before an earlier one", i)
					}
				default:
				}
			}
			if through != tc.wantThrough || h.proto != tc.wantProto || h.waiting != tc.wantWaitingLeft || len(h.held) != tc.held-tc.wantThrough {
				t.Errorf("let %d through, proto %d, waiting %d, held %d; want %d, %d, %d, %d",
					through, h.proto, h.waiting, len(h.held), tc.wantThrough, tc.wantProto, tc.wantWaitingLeft, tc.held-tc.wantThrough)
			}
		})
	}
}

// TestDialGateHeldCallGivesUp: a call held behind a first call whose
// connection does not come (the endpoint accepts and never answers the
// TLS handshake) returns its context's error when it is cancelled, and
// leaves the queue; the first call fails when the endpoint goes.
func TestDialGateHeldCallGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var accepted []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted = append(accepted, c)
			mu.Unlock()
		}
	}()
	closeAll := func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range accepted {
			_ = c.Close()
		}
		mu.Unlock()
	}
	t.Cleanup(closeAll)
	g := newDialGate(newTransport(0))
	c := &http.Client{Transport: g}
	url := "https://" + ln.Addr().String() + "/v1/chat/completions"
	first := make(chan error, 1)
	go func() {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		first <- err
	}()
	host := func() *gateHost {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.hosts[ln.Addr().String()]
	}
	held := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		if h := g.hosts[ln.Addr().String()]; h != nil {
			return len(h.held)
		}
		return -1
	}
	waitFor(t, "the first call under way", func() bool { h := host(); return h != nil && held() == 0 })
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	body := &closeRecorder{Reader: strings.NewReader("{}")}
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		second <- err
	}()
	waitFor(t, "the second call held", func() bool { return held() == 1 })
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Errorf("held call: %v, want its context's error", err)
	}
	if n := held(); n != 0 {
		t.Errorf("%d calls still held after the only one gave up", n)
	}
	if !body.closed.Load() {
		t.Error("the held call's body was not closed")
	}
	closeAll()
	if err := <-first; err == nil {
		t.Error("the first call succeeded against an endpoint that never answered")
	}
	if h := host(); h.waiting != 0 || h.proto != gateUnknown {
		t.Errorf("after both: waiting %d, proto %d; want 0 and unknown", h.waiting, h.proto)
	}
}

// closeRecorder is a request body that remembers being closed.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
