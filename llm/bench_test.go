package llm

import (
	"context"
	"testing"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// BenchmarkComplete is one streamed chat completion through openai-go's
// request building and our stream decoding, answered in process by the
// fake ("echo: hi", usage).
func BenchmarkComplete(b *testing.B) {
	fake := fakeopenai.New(fakeopenai.WithRequestLogLimit(0)) // no one reads its request log
	c, err := New(Config{BaseURL: "http://fake.invalid/v1", APIKey: "x",
		Transport: fakeopenai.InProcess{H: fake.Handler()}})
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Messages: []Message{{Role: "system", Content: "You are a helpful assistant."}, {Role: "user", Content: "hi"}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(ctx, req, func(string) {}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
