package fakeopenai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

// streamChat runs one streamed chat completion through openai-go and
// returns the content deltas, the tool calls and the usage chunk's usage.
func streamChat(t *testing.T, client openai.Client, params openai.ChatCompletionNewParams) (deltas []string, calls []openai.ChatCompletionChunkChoiceDeltaToolCall, usage *openai.CompletionUsage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) == 0 && c.JSON.Usage.Valid() {
			u := c.Usage
			usage = &u
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				deltas = append(deltas, ch.Delta.Content)
			}
			calls = append(calls, ch.Delta.ToolCalls...)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return deltas, calls, usage
}

func TestDemoReplyStreamsDeltasAndUsage(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t, fakeopenai.WithHandler(fakeopenai.DemoReply), fakeopenai.WithChunkDelay(time.Millisecond))
	client := newClient(srv)
	params := openai.ChatCompletionNewParams{
		Model:         "gpt-4o-mini",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell me a story about trains")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	deltas, _, usage := streamChat(t, client, params)
	if len(deltas) < 2 {
		t.Errorf("deltas = %q, want at least 2", deltas)
	}
	if got := strings.Join(deltas, ""); got != "echo: tell me a story about trains" {
		t.Errorf("text = %q", got)
	}
	if usage == nil {
		t.Fatal("no usage chunk with include_usage")
	}
	if usage.PromptTokens <= 0 || usage.CompletionTokens <= 0 || usage.TotalTokens != usage.PromptTokens+usage.CompletionTokens {
		t.Errorf("usage = %+v", usage)
	}
	// Deterministic: the same request counts the same.
	_, _, again := streamChat(t, client, params)
	if again == nil || again.TotalTokens != usage.TotalTokens {
		t.Errorf("usage not deterministic: %+v then %+v", usage, again)
	}

	// Without include_usage, as on the real API, no usage chunk.
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	if _, _, u := streamChat(t, client, params); u != nil {
		t.Errorf("usage without include_usage: %+v", u)
	}
}

func subagentTool(name string) openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: name, Description: openai.String("Ask the agent."),
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"input": map[string]any{"type": "string"}},
			"required":   []string{"input"},
		},
	})
}

func TestDemoReplyCallsToolsWhenAsked(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t, fakeopenai.WithHandler(fakeopenai.DemoReply))
	client := newClient(srv)
	tools := []openai.ChatCompletionToolUnionParam{subagentTool("subagent_writer_n2"), subagentTool("subagent_writer_n22")}
	cases := []struct {
		prompt string
		want   []string
	}{
		{"please use subagent_writer_n2 for this", []string{"subagent_writer_n2"}},
		{"Use SUBAGENT_WRITER_N22.", []string{"subagent_writer_n22"}},
		{"Delegate the poem", []string{"subagent_writer_n2", "subagent_writer_n22"}},
		{"call subagents now", []string{"subagent_writer_n2", "subagent_writer_n22"}},
		{"just answer", nil},
	}
	for _, tc := range cases {
		_, calls, _ := streamChat(t, client, openai.ChatCompletionNewParams{
			Model: "gpt-4o-mini", Tools: tools,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(tc.prompt)},
		})
		var names []string
		for _, c := range calls {
			if c.Function.Name == "" {
				continue // an arguments piece
			}
			names = append(names, c.Function.Name)
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: called %v, want %v", tc.prompt, names, tc.want)
		}
	}

	// Non-streaming round trip: tool call with schema-shaped arguments,
	// then the final answer carries the tool result.
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("delegate: write a haiku")}
	comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Tools: tools[:1], Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	tcs := comp.Choices[0].Message.ToolCalls
	if len(tcs) != 1 || comp.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("tool calls = %+v, finish %q", tcs, comp.Choices[0].FinishReason)
	}
	var args struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal([]byte(tcs[0].Function.Arguments), &args); err != nil || args.Input != "delegate: write a haiku" {
		t.Errorf("arguments = %s (%v)", tcs[0].Function.Arguments, err)
	}
	msgs = append(msgs, comp.Choices[0].Message.ToParam(), openai.ToolMessage("an old silent pond", tcs[0].ID))
	comp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Tools: tools[:1], Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	want := "echo: delegate: write a haiku\nsubagent_writer_n2: an old silent pond"
	if got := comp.Choices[0].Message.Content; got != want || len(comp.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("final = %q (calls %d), want %q", got, len(comp.Choices[0].Message.ToolCalls), want)
	}
}
