package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// cmdFakeLLM serves the built-in fake OpenAI-compatible endpoint: for
// demos without an API key, browser tests and load tests. It answers
// "echo: <last user message>" (or schema-shaped JSON when asked for JSON).
func cmdFakeLLM(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fake-llm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	latency := fs.Duration("latency", 0, "delay before each reply")
	chunkDelay := fs.Duration("chunk-delay", 0, "delay between streamed chunks")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	srv, err := fakeopenai.Start(fakeopenai.WithAddr(*addr), fakeopenai.WithLatency(*latency),
		fakeopenai.WithChunkDelay(*chunkDelay), fakeopenai.WithRequestLogLimit(0))
	if err != nil {
		fmt.Fprintln(stderr, "switchyard fake-llm:", err)
		return exitUsage
	}
	// Scripts read this line: point OPENAI_BASE_URL at the URL.
	fmt.Fprintf(stdout, "fake-llm listening url=%s\n", srv.URL())
	<-ctx.Done()
	shut := make(chan struct{})
	go func() { _ = srv.Close(); close(shut) }()
	select {
	case <-shut:
	case <-time.After(5 * time.Second):
	}
	return exitOK
}
