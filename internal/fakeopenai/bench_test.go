package fakeopenai_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// Throughput of the fake as the real client sees it (client cost included).
func BenchmarkChatCompletionClient(b *testing.B) {
	srv := fakeopenai.StartT(b, fakeopenai.WithRequestLogLimit(0))
	client := newClient(srv)
	params := chatParams()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := client.Chat.Completions.New(context.Background(), params); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkChatStreamClient(b *testing.B) {
	srv := fakeopenai.StartT(b, fakeopenai.WithRequestLogLimit(0))
	client := newClient(srv)
	params := chatParams()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			stream := client.Chat.Completions.NewStreaming(context.Background(), params)
			for stream.Next() {
			}
			if err := stream.Err(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkResponsesStreamClient(b *testing.B) {
	srv := fakeopenai.StartT(b, fakeopenai.WithRequestLogLimit(0))
	client := newClient(srv)
	params := responses.ResponseNewParams{Model: "gpt-5", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("a b c d e f g h")}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			stream := client.Responses.NewStreaming(context.Background(), params)
			for stream.Next() {
			}
			if err := stream.Err(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Server-side cost with a minimal net/http client, default request log on.
func BenchmarkChatServerRaw(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "sse"}[stream]
		b.Run(name, func(b *testing.B) {
			srv := fakeopenai.StartT(b)
			body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"one two three four five six seven eight"}]}`)
			if stream {
				body = []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"one two three four five six seven eight"}]}`)
			}
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			url := srv.URL() + "/chat/completions"
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, err := hc.Post(url, "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != 200 {
						b.Errorf("status %d", res.StatusCode)
						return
					}
				}
			})
		})
	}
}
