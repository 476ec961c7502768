package storetest

import (
	"testing"

	"github.com/switchyard/switchyard/internal/fakeopenai"
	"github.com/switchyard/switchyard/llm"
)

// InProcessLLM is an LLM client answered by the fake OpenAI server in
// process ("echo: <input>"), at once unless opts say otherwise (its
// request log, which nothing here can read, is off): the
// engine's and the store's work, not the network's, in tests and
// benchmarks.
func InProcessLLM(tb testing.TB, opts ...fakeopenai.Option) *llm.Client {
	tb.Helper()
	c, err := llm.New(llm.Config{BaseURL: "http://fake.invalid/v1", APIKey: "x",
		Transport: fakeopenai.InProcess{H: fakeopenai.New(append([]fakeopenai.Option{fakeopenai.WithRequestLogLimit(0)}, opts...)...).Handler()}})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
