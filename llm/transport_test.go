package llm

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
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
