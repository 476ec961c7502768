package llm

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

// TestSSEDecoderMatchesSDK: our decoder yields exactly the events (type
// and data) openai-go's decoder yields, for the shapes a server may send.
func TestSSEDecoderMatchesSDK(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 10000) // longer than the pooled reader's buffer
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"one event", "data: {\"a\":1}\n\n"},
		{"done", "data: {\"a\":1}\n\ndata: [DONE]\n\n"},
		{"crlf", "data: one\r\n\r\ndata: two\r\n\r\n"},
		{"multi-line data", "data: a\ndata: b\n\n"},
		{"no space after colon", "data:a\n\n"},
		{"comment and unknown fields", ": keep-alive\nid: 7\nretry: 10\ndata: x\n\n"},
		{"event name", "event: error\ndata: {\"message\":\"m\"}\n\n"},
		{"leading blank lines", "\n\n\ndata: x\n\n"},
		{"event name reset by blank", "event: e\n\ndata: x\n\n"},
		{"last event without blank line", "data: x\n\ndata: y\n"},
		{"last line without newline", "data: x\n\ndata: y"},
		{"long line", "data: " + long + "\n\ndata: " + long + long + "\n\n"},
		{"field without colon", "data\n\ndata: x\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := collect(ssestream.NewDecoder(&http.Response{
				Header: http.Header{"Content-Type": {"text/event-stream"}},
				Body:   io.NopCloser(strings.NewReader(tc.in)),
			}))
			got := collect(newSSEDecoder(io.NopCloser(strings.NewReader(tc.in))))
			if len(got) != len(want) {
				t.Fatalf("events %q, want %q", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("event %d: %q, want %q", i, got[i], want[i])
				}
			}
		})
	}
}

func collect(d ssestream.Decoder) []string {
	var out []string
	for d.Next() {
		ev := d.Event()
		out = append(out, ev.Type+"|"+string(ev.Data))
	}
	if err := d.Err(); err != nil {
		out = append(out, "err: "+err.Error())
	}
	_ = d.Close()
	return out
}

// TestSSEDecoderTooLong: an event past the bound is an error, not memory
// without end.
func TestSSEDecoderTooLong(t *testing.T) {
	t.Parallel()
	in := "data: " + strings.Repeat("y", maxSSEData+10) + "\n\n"
	d := newSSEDecoder(io.NopCloser(strings.NewReader(in)))
	if d.Next() {
		t.Fatal("an event past the bound was decoded")
	}
	if d.Err() != errSSETooLong {
		t.Fatalf("err %v, want %v", d.Err(), errSSETooLong)
	}
}
