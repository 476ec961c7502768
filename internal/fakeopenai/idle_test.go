package fakeopenai_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// WithIdleTimeout closes a keep-alive connection that waits for its next
// request longer than the timeout; without it the connection stays open.
func TestIdleTimeoutClosesKeepAliveConnections(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		opts   []fakeopenai.Option
		closed bool
	}{
		{"with", []fakeopenai.Option{fakeopenai.WithIdleTimeout(200 * time.Millisecond)}, true},
		{"without", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeopenai.StartT(t, tc.opts...)
			u, err := url.Parse(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			// Closed: EOF long before this deadline, however loaded the
			// machine. Open: the read waits until the deadline.
			wait := 20 * time.Second
			if !tc.closed {
				wait = time.Second
			}
			_ = conn.SetReadDeadline(time.Now().Add(wait))
			_, err = br.ReadByte()
			var ne net.Error
			timedOut := errors.As(err, &ne) && ne.Timeout()
			if tc.closed && !errors.Is(err, io.EOF) {
				t.Fatalf("connection not closed by the server: %v", err)
			}
			if !tc.closed && !timedOut {
				t.Fatalf("connection closed without an idle timeout: %v", err)
			}
		})
	}
}
