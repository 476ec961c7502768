package fakeopenai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

func TestChatNonStreamingDefaultEcho(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv)

	comp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("be brief"),
			openai.UserMessage("hello there"),
		},
		ReasoningEffort: shared.ReasoningEffortHigh,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	assertRequiredFields(t, "ChatCompletion", comp)
	if got := comp.Choices[0].Message.Content; got != "echo: hello there" {
		t.Errorf("content = %q, want echo", got)
	}
	if comp.Choices[0].FinishReason != "stop" || comp.Choices[0].Message.Role != "assistant" {
		t.Errorf("finish=%q role=%q", comp.Choices[0].FinishReason, comp.Choices[0].Message.Role)
	}
	if !strings.HasPrefix(comp.ID, "chatcmpl-") || comp.Model != "gpt-4o-mini" || comp.Object != "chat.completion" {
		t.Errorf("id=%q model=%q object=%q", comp.ID, comp.Model, comp.Object)
	}
	if comp.Usage.PromptTokens <= 0 || comp.Usage.CompletionTokens <= 0 ||
		comp.Usage.TotalTokens != comp.Usage.PromptTokens+comp.Usage.CompletionTokens {
		t.Errorf("usage = %+v", comp.Usage)
	}

	req, ok := srv.LastRequest()
	if !ok {
		t.Fatal("no request logged")
	}
	if req.API != fakeopenai.APIChat || req.Model != "gpt-4o-mini" || req.Stream || req.ReasoningEffort != "high" {
		t.Errorf("request = api %q model %q stream %v effort %q", req.API, req.Model, req.Stream, req.ReasoningEffort)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Content != "hello there" {
		t.Errorf("messages = %+v", req.Messages)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	if !json.Valid(req.Body) {
		t.Errorf("raw body not kept: %q", req.Body)
	}
}

func TestChatStreamingAccumulator(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv)
	text := "The quick brown fox jumps over the lazy dog."
	calls := []fakeopenai.ToolCall{
		{ID: "call_a", Name: "lookup", Arguments: `{"query":"foxes and dogs","limit":10}`},
		{Name: "weather", Arguments: `{"city":"Zürich"}`},
	}
	srv.Enqueue(fakeopenai.Reply{Text: text, ToolCalls: calls})

	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "gpt-4o-mini",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "lookup"}),
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "weather"}),
		},
	})
	var acc openai.ChatCompletionAccumulator
	var chunks, contentChunks int
	var finished []openai.FinishedChatCompletionToolCall
	for stream.Next() {
		chunk := stream.Current()
		assertRequiredFields(t, "ChatCompletionChunk", chunk)
		if !acc.AddChunk(chunk) {
			t.Fatalf("accumulator rejected chunk %d: %s", chunks, chunk.RawJSON())
		}
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			contentChunks++
		}
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if contentChunks < 3 {
		t.Errorf("content arrived in %d chunks, want it split into several", contentChunks)
	}
	msg := acc.Choices[0].Message
	if msg.Content != text {
		t.Errorf("content = %q, want %q", msg.Content, text)
	}
	if acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish_reason = %q", acc.Choices[0].FinishReason)
	}
	if len(msg.ToolCalls) != 2 {
		t.Fatalf("tool calls = %+v", msg.ToolCalls)
	}
	for i, want := range calls {
		got := msg.ToolCalls[i]
		if got.Function.Name != want.Name || got.Function.Arguments != want.Arguments || got.Type != "function" {
			t.Errorf("tool call %d = %+v, want %+v", i, got, want)
		}
	}
	if msg.ToolCalls[0].ID != "call_a" || !strings.HasPrefix(msg.ToolCalls[1].ID, "call_") {
		t.Errorf("tool call ids = %q, %q", msg.ToolCalls[0].ID, msg.ToolCalls[1].ID)
	}
	if len(finished) == 0 || finished[0].Name != "lookup" {
		t.Errorf("JustFinishedToolCall events = %+v", finished)
	}
	if acc.Usage.TotalTokens == 0 {
		t.Errorf("include_usage chunk missing: %+v", acc.Usage)
	}
	req, _ := srv.LastRequest()
	if !req.Stream || !req.IncludeUsage || !req.HasTool("lookup") || len(req.Tools) != 2 || req.Tools[0].Type != "function" {
		t.Errorf("request = stream %v usage %v tools %+v", req.Stream, req.IncludeUsage, req.Tools)
	}
}

func TestChatStreamingExactChunks(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv)
	srv.Enqueue(fakeopenai.Reply{Chunks: []string{"Hel", "lo", ", wor", "ld"}})

	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	var deltas []string
	var finish string
	for stream.Next() {
		c := stream.Current()
		if c.JSON.Usage.Raw() != "" {
			t.Errorf("usage field sent without include_usage: %s", c.RawJSON())
		}
		if len(c.Choices) == 0 {
			continue
		}
		if d := c.Choices[0].Delta.Content; d != "" {
			deltas = append(deltas, d)
		}
		if c.Choices[0].FinishReason != "" {
			finish = c.Choices[0].FinishReason
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(deltas, "|") != "Hel|lo|, wor|ld" || finish != "stop" {
		t.Errorf("deltas = %q finish = %q", deltas, finish)
	}
}

// A full tool round trip: the model calls a tool, the client runs it and
// sends the result back as a role "tool" message, the model answers.
func TestChatToolRoundTrip(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "stream"}[streaming]
		t.Run(name, func(t *testing.T) {
			srv := fakeopenai.StartT(t, fakeopenai.WithHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
				if res := req.ToolResults(); len(res) > 0 {
					return fakeopenai.Reply{Text: "weather is " + res[len(res)-1].Content}
				}
				return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}
			}))
			client := newClient(srv)
			ctx := context.Background()
			params := openai.ChatCompletionNewParams{
				Model:    "gpt-4o-mini",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Oslo?")},
				Tools:    []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})},
			}
			complete := func() openai.ChatCompletionMessage {
				t.Helper()
				if !streaming {
					comp, err := client.Chat.Completions.New(ctx, params)
					if err != nil {
						t.Fatal(err)
					}
					return comp.Choices[0].Message
				}
				stream := client.Chat.Completions.NewStreaming(ctx, params)
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				return acc.Choices[0].Message
			}

			first := complete()
			if len(first.ToolCalls) != 1 || first.ToolCalls[0].Function.Name != "get_weather" {
				t.Fatalf("first reply = %+v", first)
			}
			call := first.ToolCalls[0]
			params.Messages = append(params.Messages, first.ToParam(), openai.ToolMessage("sunny, 21C", call.ID))
			final := complete()
			if final.Content != "weather is sunny, 21C" {
				t.Errorf("final content = %q", final.Content)
			}

			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("requests = %d", len(reqs))
			}
			msgs := reqs[1].Messages
			if len(msgs) != 3 {
				t.Fatalf("second request messages = %+v", msgs)
			}
			if a := msgs[1]; a.Role != "assistant" || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != call.ID ||
				a.ToolCalls[0].Arguments != `{"city":"Oslo"}` {
				t.Errorf("assistant message = %+v", a)
			}
			if m := msgs[2]; m.Role != "tool" || m.ToolCallID != call.ID || m.Content != "sunny, 21C" {
				t.Errorf("tool message = %+v", m)
			}
		})
	}
}

func TestChatJSONSchemaDefaultReply(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv)
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer": map[string]any{"type": "string"},
			"score":  map[string]any{"type": "integer"},
			"mood":   map[string]any{"type": "string", "enum": []any{"happy", "sad"}},
			"tags":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required":             []any{"answer", "score", "mood", "tags"},
		"additionalProperties": false,
	}
	comp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("rate this")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "rating", Schema: schema, Strict: openai.Bool(true)},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Answer string   `json:"answer"`
		Score  *int     `json:"score"`
		Mood   string   `json:"mood"`
		Tags   []string `json:"tags"`
	}
	if err := json.Unmarshal([]byte(comp.Choices[0].Message.Content), &got); err != nil {
		t.Fatalf("content %q is not JSON: %v", comp.Choices[0].Message.Content, err)
	}
	if got.Answer != "echo: rate this" || got.Score == nil || got.Mood != "happy" || got.Tags == nil {
		t.Errorf("structured reply = %+v", got)
	}
	req, _ := srv.LastRequest()
	if rf := req.ResponseFormat; rf == nil || rf.Type != "json_schema" || rf.Name != "rating" || !rf.Strict || !json.Valid(rf.Schema) {
		t.Errorf("response format = %+v", req.ResponseFormat)
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t, fakeopenai.WithModels("m-one", "m-two"))
	client := newClient(srv)
	ctx := context.Background()
	page, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		assertRequiredFields(t, "Model", m)
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "m-one,m-two" {
		t.Errorf("models = %v", ids)
	}
	m, err := client.Models.Get(ctx, "m-two")
	if err != nil || m.ID != "m-two" || m.OwnedBy == "" {
		t.Errorf("Get = %+v, %v", m, err)
	}
	_, err = client.Models.Get(ctx, "nope")
	assertAPIError(t, err, 404)
}
