package llm

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// TestClientKeepsAConnectionPerCallInFlight: with MaxConns calls in flight
// at once (a fan-out as wide as the engine's cap), the next wave reuses
// the connections of the first instead of dialing most of them again (it
// kept 512: a 1,000-branch fan-out dialed ~500 each time).
func TestClientKeepsAConnectionPerCallInFlight(t *testing.T) {
	const wave = 600
	var dialed atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Each wave's requests wait for one another at the server, so every
	// call of a wave is in flight at once however slow the machine: the
	// first wave needs wave connections, and so does the second.
	fake := fakeopenai.New().Handler()
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if arrived++; arrived == wave {
			close(all)
		}
		ready := all
		mu.Unlock()
		select {
		case <-ready:
		case <-time.After(time.Minute): // a wave that never fills fails below, not by hanging
		}
		fake.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: handler,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				dialed.Add(1)
			}
		}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	c, err := New(Config{BaseURL: "http://" + ln.Addr().String() + "/v1", APIKey: "x", MaxConns: wave})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Messages: []Message{{Role: "user", Content: "hi"}}}
	run := func() {
		mu.Lock()
		arrived, all = 0, make(chan struct{})
		mu.Unlock()
		var wg sync.WaitGroup
		for range wave {
			wg.Go(func() {
				if _, err := c.Complete(context.Background(), req, func(string) {}, nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	run()
	first := dialed.Load()
	if first != wave {
		t.Fatalf("first wave dialed %d connections, want %d (one per call in flight)", first, wave)
	}
	// A connection goes back to the pool just after its call returns.
	time.Sleep(200 * time.Millisecond)
	run()
	// Slack for a call of the second wave that started before a connection
	// of the first was back in the pool.
	if again := dialed.Load() - first; again > wave/20 {
		t.Errorf("second wave dialed %d new connections (first %d): idle connections were closed", again, first)
	}
	// The 600 idle connections of an http:// endpoint hold no goroutine of
	// the client (h1Transport): net/http's kept a reader and a writer each.
	buf := make([]byte, 64<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if n := strings.Count(stacks, "net/http.(*persistConn).readLoop"); n != 0 {
		t.Errorf("%d net/http connection readers for an http:// endpoint, want none", n)
	}
}
