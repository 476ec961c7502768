package llm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The h1 transport's tests run real servers on loopback: net/http's
// (chunked streams, keep-alive, its idle handling) and raw TCP ones that
// answer byte for byte what a test needs (a close after one answer, a 100
// Continue, bytes after the response).

// countingServer is an httptest server that counts the connections it
// accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func newTestH1(tb testing.TB, maxIdle int) *h1Transport {
	t := newH1Transport(newTransport(maxIdle), maxIdle)
	t.proxied = func(*http.Request) bool { return false } // the test's environment may set a proxy
	tb.Cleanup(t.CloseIdleConnections)                    // before the servers' cleanups wait for their connections
	return t
}

func post(t *testing.T, rt http.RoundTripper, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	// Read again after its end: EOF again, as a body's reads should give.
	if n, err := resp.Body.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("a read after the end: %d, %v", n, err)
	}
	resp.Body.Close()
	return string(b)
}

// TestH1RoundTripsAndKeepsItsConnection: JSON answers and chunked event
// streams come back whole, and sequential calls share one connection.
func TestH1RoundTripsAndKeepsItsConnection(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 5 {
				fmt.Fprintf(w, "data: %s %d\n\n", b, i)
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		fmt.Fprintf(w, `{"got":%q}`, b)
	})
	tr := newTestH1(t, 4)
	for i := range 20 {
		resp := post(t, tr, context.Background(), srv.URL+"/json", fmt.Sprintf("call %d", i))
		if got := readAll(t, resp); resp.StatusCode != 200 || got != fmt.Sprintf(`{"got":"call %d"}`, i) || resp.Header.Get("X-Echo") != "Bearer k" {
			t.Fatalf("call %d: %d %q %v", i, resp.StatusCode, got, resp.Header)
		}
		resp = post(t, tr, context.Background(), srv.URL+"/stream", "s")
		want := "data: s 0\n\ndata: s 1\n\ndata: s 2\n\ndata: s 3\n\ndata: s 4\n\n"
		if got := readAll(t, resp); got != want || len(resp.TransferEncoding) == 0 {
			t.Fatalf("stream %d: %q (transfer encoding %v)", i, got, resp.TransferEncoding)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("40 sequential calls opened %d connections, want 1", n)
	}
}

// rawServer accepts connections and hands each to serve.
func rawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String(), &conns
}

// TestH1RequestOnTheWire: the request that reaches the server is the one
// asked for: method, path and query, Host, every header once, the body
// with its length; a GET carries no Content-Length.
func TestH1RequestOnTheWire(t *testing.T) {
	got := make(chan *http.Request, 2)
	bodies := make(chan string, 2)
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			b, _ := io.ReadAll(req.Body)
			got <- req
			bodies <- string(b)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr := newTestH1(t, 2)
	body := strings.Repeat("é{}", 30000) // larger than any one buffer
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions?x=1&y=%20", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	req.Header.Set("User-Agent", "OpenAI/Go")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if readAll(t, resp) != "ok" {
		t.Fatal("answer")
	}
	r, b := <-got, <-bodies
	if r.Method != "POST" || r.URL.RequestURI() != "/v1/chat/completions?x=1&y=%20" || r.Host != strings.TrimPrefix(url, "http://") ||
		r.ContentLength != int64(len(body)) || b != body || r.Header.Get("Authorization") != "Bearer secret" ||
		strings.Join(r.Header.Values("X-Multi"), ",") != "a,b" || r.Header.Get("User-Agent") != "OpenAI/Go" || len(r.Header.Values("Host")) != 0 {
		t.Fatalf("the server got %s %s host %q length %d, body equal %v, headers %v", r.Method, r.URL.RequestURI(), r.Host, r.ContentLength, b == body, r.Header)
	}
	req, _ = http.NewRequest(http.MethodGet, url+"/v1/models", nil)
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if r := <-got; r.Method != "GET" || r.Header.Get("Content-Length") != "" || r.Header.Get("User-Agent") == "" {
		t.Fatalf("GET: %v", r.Header)
	}
	<-bodies

	// A body over h1MaxBody goes through net/http (the fallback), whole.
	big := strings.Repeat("x", h1MaxBody+1)
	req, _ = http.NewRequest(http.MethodPost, url, strings.NewReader(big))
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if r, b := <-got, <-bodies; r.ContentLength != int64(len(big)) || b != big {
		t.Fatalf("a large body: length %d, equal %v", r.ContentLength, b == big)
	}

	// A header that would split the request is refused before anything is sent.
	req, _ = http.NewRequest(http.MethodPost, url, strings.NewReader("x"))
	req.Header.Set("X-Evil", "a\r\nInjected: yes")
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "X-Evil") {
		t.Fatalf("a header with CRLF: %v", err)
	}
}

// TestH1ServerClosedIdleConnection: a server that closes a kept-alive
// connection after its answer (as servers with short idle timeouts do)
// costs the next call nothing: it sees the close and dials again.
func TestH1ServerClosedIdleConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(net.Conn)
	}{
		{"FIN", func(c net.Conn) { c.Close() }},
		{"RST", func(c net.Conn) { c.(*net.TCPConn).SetLinger(0); c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mayClose, closed := make(chan struct{}), make(chan struct{})
			url, conns := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
				// Closes once the client has read the answer (and kept
				// the connection: the answer says nothing of a close).
				<-mayClose
				tc.close(c)
				closed <- struct{}{}
			})
			tr := newTestH1(t, 2)
			for i := range 5 {
				resp := post(t, tr, context.Background(), url, "x")
				if got := readAll(t, resp); got != "hello" {
					t.Fatalf("call %d: %q", i, got)
				}
				if n := tr.nIdleNow(); n != 1 {
					t.Fatalf("call %d: %d idle connections after it, want 1", i, n)
				}
				mayClose <- struct{}{}
				<-closed
			}
			if n := conns.Load(); n != 5 {
				t.Errorf("%d connections for 5 calls to a server that closes each", n)
			}
		})
	}
}

// TestH1ConnectionCloseAndExtraBytes: an answer with Connection: close, or
// followed by bytes no request asked for, leaves its connection unused.
func TestH1ConnectionCloseAndExtraBytes(t *testing.T) {
	for _, tc := range []struct{ name, answer string }{
		{"close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"},
		{"extra", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
		{"informational", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, conns := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					io.WriteString(c, tc.answer)
				}
			})
			tr := newTestH1(t, 2)
			for i := range 3 {
				resp := post(t, tr, context.Background(), url, "x")
				if got := readAll(t, resp); got != "ok" || resp.StatusCode != 200 {
					t.Fatalf("call %d: %d %q", i, resp.StatusCode, got)
				}
			}
			want := int64(3)
			if tc.name == "informational" {
				want = 1 // a good connection, kept
			}
			if n := conns.Load(); n != want {
				t.Errorf("%d connections for 3 calls, want %d", n, want)
			}
		})
	}
}

// endless streams an event every 5 ms until the client goes away.
func endless(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	for i := 0; ; i++ {
		if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestH1CancelAndEarlyClose: a stream given up midway, by its context or
// by closing its body, ends at once (a close does not read the stream to
// its end), its connection is not used again, and the next call works.
func TestH1CancelAndEarlyClose(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fine" {
			io.WriteString(w, "fine")
			return
		}
		endless(w, r)
	})
	tr := newTestH1(t, 4)
	for _, how := range []string{"cancel", "close"} {
		ctx, cancel := context.WithCancel(context.Background())
		resp := post(t, tr, ctx, srv.URL, "x")
		buf := make([]byte, 64)
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		if how == "cancel" {
			go func() { _, err := io.ReadAll(resp.Body); done <- err }()
			cancel()
		} else {
			go func() { done <- resp.Body.Close() }()
		}
		select {
		case err := <-done:
			if how == "cancel" && !errors.Is(err, context.Canceled) {
				t.Errorf("a cancelled stream's read: %v, want context.Canceled", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: the body did not end", how)
		}
		cancel()
		resp.Body.Close()
	}
	if tr.nIdleNow() != 0 {
		t.Errorf("%d connections kept after streams given up", tr.nIdleNow())
	}
	if got := readAll(t, post(t, tr, context.Background(), srv.URL+"/fine", "x")); got != "fine" {
		t.Fatalf("after: %q", got)
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (one per stream given up, one after)", n)
	}
	// A call whose context is already over sends nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call: %v", err)
	}
}

func (t *h1Transport) nIdleNow() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nIdle
}

// TestH1Fallback: https:// and proxied calls go through net/http.
func TestH1Fallback(t *testing.T) {
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls") }))
	defer tls.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain") }))
	defer plain.Close()
	var fell atomic.Int64
	fb := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		fell.Add(1)
		return tls.Client().Transport.RoundTrip(r)
	})
	tr := newH1Transport(fb, 2)
	tr.proxied = func(r *http.Request) bool { return strings.Contains(r.URL.Path, "proxied") }
	if got := readAll(t, post(t, tr, context.Background(), tls.URL, "x")); got != "tls" || fell.Load() != 1 {
		t.Fatalf("https: %q, fallback used %d times", got, fell.Load())
	}
	if got := readAll(t, post(t, tr, context.Background(), plain.URL+"/proxied", "x")); got != "plain" || fell.Load() != 2 {
		t.Fatalf("proxied: %q, fallback used %d times", got, fell.Load())
	}
	if got := readAll(t, post(t, tr, context.Background(), plain.URL, "x")); got != "plain" || fell.Load() != 2 {
		t.Fatalf("plain: %q, fallback used %d times", got, fell.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestH1ConcurrentCallsAndIdleLimit: calls from many goroutines at once
// (under -race) each get their whole answer; at most maxIdle connections
// stay idle; idle ones are closed after the idle timeout.
func TestH1ConcurrentCallsAndIdleLimit(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		for i := range 3 {
			fmt.Fprintf(w, "data: %s/%d\n\n", b, i)
			w.(http.Flusher).Flush()
		}
	})
	tr := newTestH1(t, 3)
	tr.idleTimeout = 300 * time.Millisecond
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				id := fmt.Sprintf("%d-%d", g, i)
				req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(id))
				resp, err := tr.RoundTrip(req)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf("data: %s/0\n\ndata: %s/1\n\ndata: %s/2\n\n", id, id, id); err != nil || string(b) != want {
					errs <- fmt.Errorf("call %s: %q, %v", id, b, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := tr.nIdleNow(); n < 1 || n > 3 {
		t.Errorf("%d idle connections, want 1 to 3", n)
	}
	deadline := time.Now().Add(60 * time.Second)
	for tr.nIdleNow() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := tr.nIdleNow(); n != 0 {
		t.Errorf("%d idle connections left after the idle timeout", n)
	}
}

// BenchmarkLoopbackStream: one streamed call (a request of 2 KiB, an
// answer of 8 chunks) over loopback, through the h1 transport and through
// net/http's. The server's allocations are in both; the difference is the
// client's.
//
//	go test ./llm -run '^$' -bench LoopbackStream -benchmem
func BenchmarkLoopbackStream(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 8 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"chunk %d\"}}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	body := strings.Repeat("m", 2<<10)
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"h1", newTestH1(b, 4)},
		{"net-http", newTransport(4)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, 4<<10)
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := tc.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		})
	}
}
