package llm

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// TestChatStreamDecoding drives the lean chat stream decoder through a
// real fake server: text deltas, parallel tool calls, usage, a stream cut
// before its end, a malformed chunk, and HTTP errors (transient or not).
func TestChatStreamDecoding(t *testing.T) {
	srv := fakeopenai.StartT(t)
	c, err := New(Config{BaseURL: srv.URL(), APIKey: "k", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Messages: []Message{{Role: "user", Content: "hi"}}}
	ctx := context.Background()

	srv.Enqueue(fakeopenai.Reply{Chunks: []string{"hel", "lo ", "world"}, Usage: &fakeopenai.Usage{PromptTokens: 7, CompletionTokens: 3}})
	var deltas []string
	resp, err := c.Complete(ctx, req, func(d string) { deltas = append(deltas, d) }, nil)
	if err != nil || resp.Text != "hello world" || strings.Join(deltas, "|") != "hel|lo |world" {
		t.Fatalf("text: %+v %v deltas %q", resp, err, deltas)
	}
	if resp.Usage.PromptTokens != 7 || resp.Usage.CompletionTokens != 3 || resp.Usage.TotalTokens != 10 {
		t.Errorf("usage %+v", resp.Usage)
	}

	srv.Enqueue(fakeopenai.Reply{Text: "calling", ToolCalls: []fakeopenai.ToolCall{
		{ID: "a", Name: "Read", Arguments: `{"file_path":"x.go"}`},
		{ID: "b", Name: "Bash", Arguments: `{"command":"go test ./..."}`},
	}})
	resp, err = c.Complete(ctx, req, nil, nil)
	if err != nil || len(resp.ToolCalls) != 2 || resp.ToolCalls[0] != (ToolCall{ID: "a", Name: "Read", Arguments: `{"file_path":"x.go"}`}) ||
		resp.ToolCalls[1] != (ToolCall{ID: "b", Name: "Bash", Arguments: `{"command":"go test ./..."}`}) {
		t.Fatalf("tool calls: %+v %v", resp, err)
	}

	srv.Enqueue(fakeopenai.Reply{Text: "a long answer that is cut", TruncateStream: true, TruncateAfter: 2})
	if _, err := c.Complete(ctx, req, nil, nil); !errors.Is(err, errTruncated) || !isTransient(err) {
		t.Errorf("cut stream: %v", err)
	}
	srv.Enqueue(fakeopenai.Reply{Text: "x", Malformed: true})
	if _, err := c.Complete(ctx, req, nil, nil); err == nil {
		t.Error("malformed chunk accepted")
	}
	srv.Enqueue(fakeopenai.Reply{Status: 429, RetryAfter: time.Millisecond})
	if _, err := c.Complete(ctx, req, nil, nil); !isTransient(err) {
		t.Errorf("429: %v, want transient", err)
	}
	srv.Enqueue(fakeopenai.Reply{Status: 401, ErrorMessage: "bad key"})
	if _, err := c.Complete(ctx, req, nil, nil); err == nil || isTransient(err) || !strings.Contains(err.Error(), "bad key") {
		t.Errorf("401: %v, want a permanent error with the provider's message", err)
	}
}

func isTransient(err error) bool {
	var ce *CallError
	return errors.As(err, &ce) && ce.Transient
}

// A stream's decoder gives its buffers back to a pool when the stream
// ends, and the next stream reuses them: an error that carries the event
// it failed on keeps a copy of the event, intact after other streams.
func TestStreamErrorKeepsItsEvent(t *testing.T) {
	// Longer than the next streams' events, which then reuse its buffer
	// in place.
	errChunk := `{"error":{"message":"overloaded: ` + strings.Repeat("try again later ", 8) + `","type":"server_error"}}`
	stream := func(s string) *sseDecoder { return newSSEDecoder(io.NopCloser(strings.NewReader(s))) }
	dec := stream("data: " + errChunk + "\n\n")
	_, err := decodeChatStream(dec, nil, func() {})
	dec.Close()
	var se *ssestream.StreamError
	if !errors.As(err, &se) || !strings.Contains(se.Message, "overloaded") {
		t.Fatalf("error chunk: %v", err)
	}
	for range 3 {
		other := `data: {"choices":[{"delta":{"content":"zzz"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
		d := stream(other)
		if resp, err := decodeChatStream(d, nil, func() {}); err != nil || resp.Text != "zzz" {
			t.Fatalf("next stream: %+v %v", resp, err)
		}
		d.Close()
	}
	if got := strings.TrimSpace(string(se.Event.Data)); got != errChunk {
		t.Fatalf("the error's event after other streams: %q, want %q", got, errChunk)
	}
}
