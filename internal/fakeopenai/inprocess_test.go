package fakeopenai

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// InProcess hands back what the handler wrote: status (200 when none was
// written), headers and body, as a response over a socket would.
func TestInProcessResponse(t *testing.T) {
	cases := []struct {
		name       string
		h          http.HandlerFunc
		status     int
		header     string
		body       string
		statusLine string
	}{
		{"body only", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") },
			200, "", "hello", "200 OK"},
		{"status and header", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			w.WriteHeader(http.StatusOK) // ignored, as net/http ignores it
			_, _ = io.WriteString(w, `{"error":{}}`)
		}, 429, "3", `{"error":{}}`, "429 Too Many Requests"},
		{"nothing", func(http.ResponseWriter, *http.Request) {}, 200, "", "", "200 OK"},
		{"flushed in parts", func(w http.ResponseWriter, _ *http.Request) {
			for _, s := range []string{"data: a\n\n", "data: b\n\n"} {
				_, _ = io.WriteString(w, s)
				w.(http.Flusher).Flush()
			}
		}, 200, "", "data: a\n\ndata: b\n\n", "200 OK"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://fake.invalid/v1/chat/completions", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := InProcess{H: c.h}.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != c.status || resp.Status != c.statusLine || resp.Header.Get("Retry-After") != c.header ||
				string(body) != c.body || resp.ContentLength != int64(len(c.body)) || resp.Request != req {
				t.Fatalf("got %d %q, Retry-After %q, body %q (length %d)", resp.StatusCode, resp.Status,
					resp.Header.Get("Retry-After"), body, resp.ContentLength)
			}
		})
	}
}

// Closing a response's body gives its buffer to the next response: the
// next body reads only its own bytes, and the closed one reads nothing.
func TestInProcessBodyReuse(t *testing.T) {
	say := func(s string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, s) }
	}
	get := func(h http.Handler) *http.Response {
		req, err := http.NewRequest(http.MethodGet, "http://fake.invalid/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := InProcess{H: h}.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := get(say("a long first answer"))
	if b, err := io.ReadAll(first.Body); err != nil || string(b) != "a long first answer" {
		t.Fatalf("first body %q %v", b, err)
	}
	_ = first.Body.Close()
	_ = first.Body.Close() // twice is harmless
	if n, err := first.Body.Read(make([]byte, 8)); n != 0 || err == nil {
		t.Fatalf("read after close: %d bytes, %v", n, err)
	}
	for _, s := range []string{"second", "third, longer than the second"} {
		resp := get(say(s))
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || string(b) != s {
			t.Fatalf("body %q %v, want %q", b, err, s)
		}
	}
}
