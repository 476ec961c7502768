package llm

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

// FuzzParseChatChunk: on any input, the hand-written chunk parser agrees
// with json.Unmarshal, the reference it replaced on the hot path: both
// fail, or both give the same chunk. The parser reads a provider's bytes,
// so whatever a provider (or a proxy in front of it) sends must neither
// panic nor decode differently.
func FuzzParseChatChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want, got chatChunk
		werr := json.Unmarshal(in, &want)
		gerr := parseChatChunk(append([]byte(nil), in...), &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q:\n  parseChatChunk err %v\n  json.Unmarshal err %v", in, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(normChunk(got), normChunk(want)) {
			t.Fatalf("%q:\n  got  %+v\n  want %+v", in, got, want)
		}
	})
}

// chunkSeeds are chunks of the shapes providers send, and some they
// should not.
var chunkSeeds = []string{
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"content":"echo: hi \"q\" \u00e9 \ud83d\ude00 \n"},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"Read","arguments":"{\"p\":1}"}}]}}]}`,
	`{"error":{"message":"overloaded","type":"server_error"}}`,
	`{"choices":[null,{"delta":null}],"usage":null,"error":null}`,
	`{"usage":{"prompt_tokens":1},"usage":{"total_tokens":2}}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":1e0}]}}]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"\xff\xfe\\ud800\"}}]}",
	`{"Choices":[{"DELTA":{"Content":"x"}}],"uſage":{"total_tokens":3}}`, // ſ folds to s
	`null`,
}

// FuzzSSEDecoder: our event-stream decoder yields exactly the events
// openai-go's decoder yields for the same bytes, however the reads split
// them (split: the size of each read, cycled).
func FuzzSSEDecoder(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"data: one\r\n\r\ndata: two\r\n\r\n",
		"event: error\ndata: a\ndata: b\n\n: comment\nid: 7\n\ndata:x",
		"\n\n\ndata\n\ndata: " + strings.Repeat("y", 5000) + "\n\n",
	} {
		f.Add([]byte(s), []byte{1, 7, 255})
	}
	f.Fuzz(func(t *testing.T, in, split []byte) {
		want := collect(ssestream.NewDecoder(&http.Response{
			Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body:   io.NopCloser(strings.NewReader(string(in))),
		}))
		got := collect(newSSEDecoder(io.NopCloser(&splitReader{in: in, split: split})))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q split %v:\n  got  %q\n  want %q", in, split, got, want)
		}
	})
}

// splitReader returns in a read of split[i] bytes at a time (cycled; a
// zero or no split reads all that fits).
type splitReader struct {
	in    []byte
	split []byte
	i     int
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.in) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if len(r.split) > 0 {
		if s := int(r.split[r.i%len(r.split)]); s > 0 && s < n {
			n = s
		}
		r.i++
	}
	n = copy(p, r.in[:min(n, len(r.in))])
	r.in = r.in[n:]
	return n, nil
}
