package llm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type recordRT struct{ got *http.Request }

func (r *recordRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = req
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

type closeCount struct {
	io.Reader
	closed int
}

func (c *closeCount) Close() error { c.closed++; return nil }

// The transport sees the body as an in-memory reader (so net/http writes
// headers and body together), the original body is closed, and the
// caller's request is left as it was.
func TestInMemoryBodyTransport(t *testing.T) {
	payload := []byte(`{"model":"m","messages":[]}`)
	orig := &closeCount{Reader: bytes.NewReader(payload)}
	req, _ := http.NewRequest(http.MethodPost, "http://example.invalid/v1/chat/completions", orig)
	req.ContentLength = int64(len(payload))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(payload)), nil }
	next := &recordRT{}
	if _, err := (inMemoryBody{next}).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if next.got == req {
		t.Fatal("the caller's request was passed on (and so modified) instead of a clone")
	}
	if req.Body != orig || orig.closed != 1 {
		t.Errorf("original body: replaced %v, closed %d times", req.Body != orig, orig.closed)
	}
	b, _ := io.ReadAll(next.got.Body)
	if !bytes.Equal(b, payload) || next.got.ContentLength != int64(len(payload)) {
		t.Errorf("sent body %q (length %d)", b, next.got.ContentLength)
	}

	// Bodies without GetBody go through untouched.
	plain, _ := http.NewRequest(http.MethodPost, "http://example.invalid/", strings.NewReader("x"))
	plain.GetBody = nil
	if _, err := (inMemoryBody{next}).RoundTrip(plain); err != nil || next.got != plain {
		t.Errorf("request without GetBody: %v, passed through %v", err, next.got == plain)
	}
}

// The default client sends each call straight to its transport: a
// redirect comes back as the error it is instead of carrying the API key
// to another origin, and a failed exchange reads as net/http's client
// says it ("Post "URL": ...").
func TestDefaultClientFollowsNoRedirect(t *testing.T) {
	var elsewhere, asked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()

	c, err := New(Config{BaseURL: redirecting.URL + "/v1", APIKey: "sk-secret", MaxAttempts: 3, RetryBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Messages: []Message{{Role: "user", Content: "hi"}}}
	if _, err := c.Complete(context.Background(), req, nil, nil); err == nil || !strings.Contains(err.Error(), "answered 307, a redirect to \""+other.URL) {
		t.Errorf("a redirect answered %v, want an error naming the 307", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed: the other origin got %d requests", n)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the redirect was asked %d times, want once (it is not transient)", n)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/v1"
	_ = ln.Close()
	c, err = New(Config{BaseURL: closed, APIKey: "k", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), req, nil, nil)
	var uerr *url.Error
	if !errors.As(err, &uerr) || !strings.Contains(err.Error(), `Post "`+closed+`/chat/completions"`) {
		t.Errorf("a refused connection answered %v, want net/http's form", err)
	}
}
