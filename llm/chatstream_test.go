package llm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
