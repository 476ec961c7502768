package fakeopenai

import (
	"net/http"
	"net/http/httptest"
)

// InProcess is an http.RoundTripper that serves requests from H (a
// Server's Handler) without a socket: an instant LLM for benchmarks and
// tests that measure the engine and the store, not loopback networking.
type InProcess struct{ H http.Handler }

// RoundTrip implements http.RoundTripper.
func (t InProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.H.ServeHTTP(rec, req)
	return rec.Result(), nil
}
