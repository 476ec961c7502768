package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

const fakeLLMHelp = `usage: switchyard fake-llm [flags]

Serves a fake OpenAI-compatible endpoint (chat completions and the
Responses API) for demos without an API key, browser tests and load tests.
Point OPENAI_BASE_URL at the printed url.

It answers "echo: <last user message>" (or JSON of the requested schema's
shape), streamed in a few deltas, and reports token usage (about one token
per 4 bytes; in streams when stream_options.include_usage is set).

It calls the tools it is offered (an agent's subagents) when the last user
message asks for it (case-insensitive):
  "use <toolname>"                     calls that tool, e.g. "use subagent_researcher_n2"
  "delegate", "call subagents",
  "use tools", "use your tools"        calls every offered tool
Each call's arguments fill the tool's string parameters with the message.
After the results come back it answers "echo: <message>" followed by one
line "<toolname>: <result>" per call.

With --script FILE (YAML or JSON), conversations that match one of the
file's rules (a regexp on the first user message, optionally one on the
system prompt) get scripted turns instead: tool calls such as Read, Edit
and Bash, branches on the tool results, and a final text. The turn is
worked out from the transcript alone, so a resumed agent loop gets the
right next turn. Other conversations get the answers above. Example:

  rules:
    - match: "fix the failing test"
      turns:
        - label: test
          tool_calls:
            - name: Bash
              arguments: {command: "sh test.sh"}
        - unless_result_contains: FAILED
          text: "Done: {{last_result}}"
        - max_times: 3
          tool_calls:
            - name: Edit
              arguments: {file_path: calc.sh, old_string: "a - b", new_string: "a + b"}
          goto: test

The format (conditions, goto, max_times, delay, placeholders) is described
in internal/fakeopenai/SCRIPT.md.

flags:
`

// cmdFakeLLM serves the built-in fake OpenAI-compatible endpoint: the
// --script file's turns for conversations it matches, else
// fakeopenai.DemoReply.
func cmdFakeLLM(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fake-llm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), fakeLLMHelp)
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	latency := fs.Duration("latency", 0, "delay before each reply")
	scriptPath := fs.String("script", "", "YAML or JSON `file` of scripted agent turns (see above)")
	chunkDelay := fs.Duration("chunk-delay", 0, "delay between streamed chunks (when not given: latency/8, at most 100ms)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "chunk-delay" })
	if !given {
		*chunkDelay = fakeChunkDelay(*latency)
	}
	opts := []fakeopenai.Option{fakeopenai.WithAddr(*addr), fakeopenai.WithLatency(*latency),
		fakeopenai.WithChunkDelay(*chunkDelay), fakeopenai.WithRequestLogLimit(0),
		fakeopenai.WithHandler(fakeopenai.DemoReply)}
	if *scriptPath != "" {
		sc, err := fakeopenai.LoadScript(*scriptPath)
		if err != nil {
			fmt.Fprintln(stderr, "switchyard fake-llm:", err)
			return exitFailed
		}
		opts = append(opts, fakeopenai.WithScript(sc))
	}
	srv, err := fakeopenai.Start(opts...)
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

// fakeChunkDelay paces streamed chunks from the reply latency: a slow fake
// also streams visibly, without the stream taking much longer than the wait.
func fakeChunkDelay(latency time.Duration) time.Duration {
	return min(latency/8, 100*time.Millisecond)
}
