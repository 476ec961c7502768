package fakeopenai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

func assertAPIError(t *testing.T, err error, status int) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v (%T), want *openai.Error %d", err, err, status)
	}
	if apiErr.StatusCode != status {
		t.Errorf("StatusCode = %d, want %d", apiErr.StatusCode, status)
	}
	if apiErr.Message == "" || apiErr.Type == "" {
		t.Errorf("error body not decoded: %s", apiErr.RawJSON())
	}
	return apiErr
}

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("one two three four five six seven eight")},
	}
}

func TestChatFaultsNonStreaming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply fakeopenai.Reply
		check func(t *testing.T, err error)
	}{
		{"429 with retry-after", fakeopenai.Reply{Status: 429, RetryAfter: 2 * time.Second}, func(t *testing.T, err error) {
			e := assertAPIError(t, err, 429)
			if e.Code != "rate_limit_exceeded" || e.Response.Header.Get("Retry-After") != "2" ||
				e.Response.Header.Get("Retry-After-Ms") != "2000" {
				t.Errorf("code=%q headers=%v", e.Code, e.Response.Header)
			}
		}},
		{"500", fakeopenai.Reply{Status: 500}, func(t *testing.T, err error) {
			if e := assertAPIError(t, err, 500); e.Type != "server_error" {
				t.Errorf("type = %q", e.Type)
			}
		}},
		{"401", fakeopenai.Reply{Status: 401}, func(t *testing.T, err error) { assertAPIError(t, err, 401) }},
		{"503 custom message", fakeopenai.Reply{Status: 503, ErrorMessage: "overloaded"}, func(t *testing.T, err error) {
			if e := assertAPIError(t, err, 503); e.Message != "overloaded" {
				t.Errorf("message = %q", e.Message)
			}
		}},
		{"malformed", fakeopenai.Reply{Malformed: true}, func(t *testing.T, err error) {
			assertDecodeError(t, err)
		}},
		{"truncated body", fakeopenai.Reply{TruncateStream: true}, func(t *testing.T, err error) {
			assertDecodeError(t, err)
		}},
		{"hang", fakeopenai.Reply{Hang: true}, func(t *testing.T, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want context deadline", err)
			}
		}},
		{"reset", fakeopenai.Reply{Reset: true}, func(t *testing.T, err error) {
			assertTransportError(t, err)
		}},
	}
	srv := fakeopenai.StartT(t)
	client := newClient(srv, option.WithMaxRetries(0))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Enqueue(tt.reply)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if !tt.reply.Hang {
				ctx = context.Background()
			}
			comp, err := client.Chat.Completions.New(ctx, chatParams())
			if err == nil {
				t.Fatalf("no error; got %+v", comp)
			}
			tt.check(t, err)
		})
	}
	// The server is still healthy after all of that.
	if _, err := client.Chat.Completions.New(context.Background(), chatParams()); err != nil {
		t.Fatalf("after faults: %v", err)
	}
}

func assertDecodeError(t *testing.T, err error) {
	t.Helper()
	var apiErr *openai.Error
	if errors.As(err, &apiErr) || !strings.Contains(err.Error(), "parsing response json") {
		t.Errorf("err = %v (%T), want a JSON decode error", err, err)
	}
}

func assertTransportError(t *testing.T, err error) {
	t.Helper()
	var apiErr *openai.Error
	var urlErr *url.Error
	if errors.As(err, &apiErr) || errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &urlErr) {
		t.Errorf("err = %v (%T), want a transport (*url.Error) error", err, err)
	}
}

// drainChat reads a chat stream and reports text, finish reason and error.
func drainChat(stream interface {
	Next() bool
	Current() openai.ChatCompletionChunk
	Err() error
}) (text, finish string, err error) {
	var sb strings.Builder
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) > 0 {
			sb.WriteString(c.Choices[0].Delta.Content)
			if c.Choices[0].FinishReason != "" {
				finish = c.Choices[0].FinishReason
			}
		}
	}
	return sb.String(), finish, stream.Err()
}

func TestChatFaultsStreaming(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv, option.WithMaxRetries(0))
	full := "echo: one two three four five six seven eight"

	t.Run("truncated cleanly", func(t *testing.T) {
		srv.Enqueue(fakeopenai.Reply{Text: full, TruncateStream: true, TruncateAfter: 4})
		text, finish, err := drainChat(client.Chat.Completions.NewStreaming(context.Background(), chatParams()))
		if err != nil || finish != "" || text == "" || len(text) >= len(full) {
			t.Errorf("text=%q finish=%q err=%v; want partial text, no finish_reason, no error", text, finish, err)
		}
	})
	t.Run("truncated with reset", func(t *testing.T) {
		srv.Enqueue(fakeopenai.Reply{Text: full, TruncateStream: true, Reset: true})
		text, finish, err := drainChat(client.Chat.Completions.NewStreaming(context.Background(), chatParams()))
		if err == nil || finish != "" {
			t.Errorf("text=%q finish=%q err=%v; want a read error", text, finish, err)
		}
	})
	t.Run("malformed event", func(t *testing.T) {
		srv.Enqueue(fakeopenai.Reply{Text: full, Malformed: true})
		_, _, err := drainChat(client.Chat.Completions.NewStreaming(context.Background(), chatParams()))
		var syn *json.SyntaxError
		if !errors.As(err, &syn) {
			t.Errorf("err = %v (%T), want *json.SyntaxError", err, err)
		}
	})
	t.Run("429 before stream", func(t *testing.T) {
		srv.Enqueue(fakeopenai.Reply{Status: 429})
		_, _, err := drainChat(client.Chat.Completions.NewStreaming(context.Background(), chatParams()))
		if e := assertAPIError(t, err, 429); e.Response.Header.Get("Retry-After") != "0" {
			t.Errorf("Retry-After = %q", e.Response.Header.Get("Retry-After"))
		}
	})
	t.Run("stall mid-stream", func(t *testing.T) {
		srv.Enqueue(fakeopenai.Reply{Text: full, ChunkDelay: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		text, _, err := drainChat(client.Chat.Completions.NewStreaming(ctx, chatParams()))
		if !errors.Is(err, context.DeadlineExceeded) || text != "" {
			t.Errorf("text=%q err=%v, want context deadline after the role chunk", text, err)
		}
	})
}

func TestResponsesFaultsStreaming(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv, option.WithMaxRetries(0))
	drain := func() (types []string, err error) {
		stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
			Model: "gpt-5", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("a b c d e f g h")},
		})
		for stream.Next() {
			types = append(types, stream.Current().Type)
		}
		return types, stream.Err()
	}
	t.Run("truncated", func(t *testing.T) {
		srv.Enqueue(fakeopenai.Reply{Text: "a b c d e f g h", TruncateStream: true})
		types, err := drain()
		if err != nil || len(types) < 2 || types[0] != "response.created" || types[len(types)-1] == "response.completed" {
			t.Errorf("events = %v err = %v; want a clean but unfinished stream", types, err)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		srv.Enqueue(fakeopenai.Reply{Malformed: true})
		_, err := drain()
		var syn *json.SyntaxError
		if !errors.As(err, &syn) {
			t.Errorf("err = %v, want *json.SyntaxError", err)
		}
	})
	t.Run("500", func(t *testing.T) {
		srv.Enqueue(fakeopenai.Reply{Status: 500})
		_, err := drain()
		assertAPIError(t, err, 500)
	})
	t.Run("reset", func(t *testing.T) {
		srv.Enqueue(fakeopenai.Reply{Reset: true})
		_, err := drain()
		assertTransportError(t, err)
	})
}

// With client retries on, a reset connection and a 429 (Retry-After: 0) are
// retried transparently. (The reset goes first: connection errors back off
// 0.5s on the first retry and 1s on the second.)
func TestClientRetriesAgainstFaults(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv, option.WithMaxRetries(2))
	srv.Enqueue(fakeopenai.Reply{Reset: true}, fakeopenai.Reply{Status: 429}, fakeopenai.Reply{Text: "finally"})
	comp, err := client.Chat.Completions.New(context.Background(), chatParams())
	if err != nil {
		t.Fatal(err)
	}
	if comp.Choices[0].Message.Content != "finally" || srv.TotalRequests() != 3 {
		t.Errorf("content=%q total=%d", comp.Choices[0].Message.Content, srv.TotalRequests())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[2].Header.Get("X-Stainless-Retry-Count") != "2" {
		t.Errorf("retry count header = %q", reqs[len(reqs)-1].Header.Get("X-Stainless-Retry-Count"))
	}
}

func TestAPIKeyRequired(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t, fakeopenai.WithAPIKey("sk-right"))
	wrong := newClient(srv, option.WithMaxRetries(0))
	_, err := wrong.Chat.Completions.New(context.Background(), chatParams())
	if e := assertAPIError(t, err, 401); e.Code != "invalid_api_key" {
		t.Errorf("code = %q", e.Code)
	}
	_, err = wrong.Models.List(context.Background())
	assertAPIError(t, err, 401)

	right := newClient(srv, option.WithAPIKey("sk-right"))
	if _, err := right.Chat.Completions.New(context.Background(), chatParams()); err != nil {
		t.Fatalf("with the right key: %v", err)
	}
	if reqs := srv.Requests(); len(reqs) != 2 {
		t.Errorf("logged %d completion requests, want both (rejected one included)", len(reqs))
	}
}

func TestCloseReleasesHangingRequest(t *testing.T) {
	t.Parallel()
	srv, err := fakeopenai.Start(fakeopenai.WithHandler(func(*fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Reply{Hang: true}
	}))
	if err != nil {
		t.Fatal(err)
	}
	client := newClient(srv, option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := client.Chat.Completions.New(ctx, chatParams())
		done <- err
	}()
	for srv.InFlight() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	err = <-done
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a prompt transport error", err)
	}
	if srv.InFlight() != 0 {
		t.Errorf("in flight after close = %d", srv.InFlight())
	}
}
