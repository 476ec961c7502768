package fakeopenai

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"sync"
)

// InProcess is an http.RoundTripper that serves requests from H (a
// Server's Handler) without a socket: an instant LLM for benchmarks and
// tests that measure the engine and the store, not loopback networking.
// Its response writer keeps only what a response needs, in a buffer that
// closing the body gives back for the next response: the benchmarks that
// use it count the allocations of the whole call, and
// httptest.ResponseRecorder's copies of headers and body were a sixth of
// an agent step's bytes.
type InProcess struct{ H http.Handler }

// RoundTrip implements http.RoundTripper.
func (t InProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	w := &inProcessWriter{header: make(http.Header, 4), body: inProcessBodies.Get().(*bytes.Buffer)}
	t.H.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          &inProcessBody{buf: w.body},
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, nil
}

// inProcessBodies holds response bodies for reuse: closing a response's
// body gives its buffer back (one not closed is collected as garbage).
var inProcessBodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// inProcessBody reads a response's buffer; Close returns it to the pool.
type inProcessBody struct {
	mu  sync.Mutex
	buf *bytes.Buffer // nil once closed
}

func (b *inProcessBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf == nil {
		return 0, errors.New("fakeopenai: read on a closed response body")
	}
	return b.buf.Read(p)
}

func (b *inProcessBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf != nil {
		if b.buf.Cap() <= 64<<10 {
			b.buf.Reset()
			inProcessBodies.Put(b.buf)
		}
		b.buf = nil
	}
	return nil
}

// inProcessWriter is an http.ResponseWriter (and Flusher) that collects
// one response.
type inProcessWriter struct {
	header http.Header
	status int
	body   *bytes.Buffer
}

func (w *inProcessWriter) Header() http.Header { return w.header }

func (w *inProcessWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *inProcessWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

func (w *inProcessWriter) Flush() {}
