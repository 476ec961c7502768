package fakeopenai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

func webSearchParams(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:        "gpt-5",
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
		Instructions: openai.String("answer briefly"),
		Tools: []responses.ToolUnionParam{
			{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}},
			{OfFunction: &responses.FunctionToolParam{Name: "save_note", Parameters: map[string]any{"type": "object"}}},
		},
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
	}
}

func TestResponsesNonStreamingWebSearch(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv)

	resp, err := client.Responses.New(context.Background(), webSearchParams("latest go release"))
	if err != nil {
		t.Fatal(err)
	}
	assertRequiredFields(t, "Response", resp)
	if resp.Status != "completed" || !strings.HasPrefix(resp.ID, "resp_") || resp.Model != "gpt-5" {
		t.Errorf("status=%q id=%q model=%q", resp.Status, resp.ID, resp.Model)
	}
	if got := resp.OutputText(); got != "echo: latest go release" {
		t.Errorf("OutputText = %q", got)
	}
	if len(resp.Output) != 2 || resp.Output[0].Type != "web_search_call" || resp.Output[1].Type != "message" {
		t.Fatalf("output = %s", resp.JSON.Output.Raw())
	}
	if ws := resp.Output[0].AsWebSearchCall(); ws.Status != "completed" || ws.Action.Query != "latest go release" {
		t.Errorf("web search item = %+v", ws)
	}
	if resp.Usage.InputTokens == 0 || resp.Usage.TotalTokens != resp.Usage.InputTokens+resp.Usage.OutputTokens {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if resp.Reasoning.Effort != "low" || len(resp.Tools) != 2 || resp.Tools[0].Type != "web_search" {
		t.Errorf("echoed reasoning=%q tools=%+v", resp.Reasoning.Effort, resp.Tools)
	}

	req, _ := srv.LastRequest()
	if req.API != fakeopenai.APIResponses || req.ReasoningEffort != "low" || req.Instructions != "answer briefly" {
		t.Errorf("request api=%q effort=%q instructions=%q", req.API, req.ReasoningEffort, req.Instructions)
	}
	if !req.HasWebSearch() || !req.HasTool("web_search") || !req.HasTool("save_note") {
		t.Errorf("tools = %+v", req.Tools)
	}
	if len(req.Messages) != 1 || req.Messages[0].Role != "user" || req.Messages[0].Content != "latest go release" {
		t.Errorf("messages = %+v", req.Messages)
	}
}

func TestResponsesStreaming(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv)
	text := "Go 1.26 is the latest release, with several improvements."
	srv.Enqueue(fakeopenai.Reply{
		Text:      text,
		WebSearch: []string{"go release"},
		ToolCalls: []fakeopenai.ToolCall{{ID: "call_n", Name: "save_note", Arguments: `{"note":"remember go 1.26 release notes"}`}},
	})

	stream := client.Responses.NewStreaming(context.Background(), webSearchParams("latest go?"))
	var types []string
	var deltas strings.Builder
	var args strings.Builder
	var final responses.Response
	seq := int64(-1)
	for stream.Next() {
		ev := stream.Current()
		assertRequiredFields(t, ev.Type, ev.AsAny())
		types = append(types, ev.Type)
		if ev.SequenceNumber != seq+1 {
			t.Errorf("%s: sequence_number %d after %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		switch e := ev.AsAny().(type) {
		case responses.ResponseTextDeltaEvent:
			deltas.WriteString(e.Delta)
		case responses.ResponseTextDoneEvent:
			if e.Text != text {
				t.Errorf("output_text.done text = %q", e.Text)
			}
		case responses.ResponseFunctionCallArgumentsDeltaEvent:
			args.WriteString(e.Delta)
		case responses.ResponseCompletedEvent:
			final = e.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if deltas.String() != text || args.String() != `{"note":"remember go 1.26 release notes"}` {
		t.Errorf("deltas = %q args = %q", deltas.String(), args.String())
	}
	wantOrder := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.web_search_call.in_progress", "response.web_search_call.searching",
		"response.web_search_call.completed", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
	}
	for i, w := range wantOrder {
		if i >= len(types) || types[i] != w {
			t.Fatalf("event %d = %v, want %q (all: %v)", i, types[i:min(i+1, len(types))], w, types)
		}
	}
	count := map[string]int{}
	for _, ty := range types {
		count[ty]++
	}
	if count["response.output_item.added"] != 3 || count["response.output_item.done"] != 3 ||
		count["response.output_text.done"] != 1 || count["response.content_part.done"] != 1 ||
		count["response.function_call_arguments.delta"] < 2 || count["response.completed"] != 1 {
		t.Errorf("event counts = %v", count)
	}
	if n := len(types); n < 3 || types[n-3] != "response.function_call_arguments.done" ||
		types[n-2] != "response.output_item.done" || types[n-1] != "response.completed" {
		t.Errorf("events end with %v", types[max(0, n-3):])
	}
	if final.Status != "completed" || final.OutputText() != text || len(final.Output) != 3 {
		t.Fatalf("final response = %s", final.RawJSON())
	}
	if fc := final.Output[2].AsFunctionCall(); fc.CallID != "call_n" || fc.Name != "save_note" || fc.Status != "completed" {
		t.Errorf("function call item = %+v", fc)
	}
	req, _ := srv.LastRequest()
	if !req.Stream || req.ReasoningEffort != "low" || !req.HasWebSearch() {
		t.Errorf("request stream=%v effort=%q tools=%+v", req.Stream, req.ReasoningEffort, req.Tools)
	}
}

func TestResponsesToolRoundTrip(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t, fakeopenai.WithHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return fakeopenai.Reply{Text: "noted: " + res[0].Content}
		}
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "save_note", Arguments: `{"n":1}`}}}
	}))
	client := newClient(srv)
	ctx := context.Background()
	params := webSearchParams("save it")
	first, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Output) != 1 || first.Output[0].Type != "function_call" {
		t.Fatalf("first output = %s", first.JSON.Output.Raw())
	}
	call := first.Output[0].AsFunctionCall()
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("save it", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
		{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
			CallID: openai.String(call.CallID),
			Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("ok")},
		}},
	}}
	second, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if second.OutputText() != "noted: ok" {
		t.Errorf("second OutputText = %q", second.OutputText())
	}
	req, _ := srv.LastRequest()
	if len(req.Messages) != 3 {
		t.Fatalf("messages = %+v", req.Messages)
	}
	if m := req.Messages[1]; m.Type != "function_call" || m.Role != "assistant" || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != call.CallID {
		t.Errorf("function_call item = %+v", m)
	}
	if m := req.Messages[2]; m.Type != "function_call_output" || m.Role != "tool" || m.ToolCallID != call.CallID || m.Content != "ok" {
		t.Errorf("function_call_output item = %+v", m)
	}
}

func TestResponsesJSONSchemaRecorded(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv)
	params := responses.ResponseNewParams{
		Model: "gpt-5-mini",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("out",
			map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []any{"ok"}})},
	}
	resp, err := client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != `{"ok":false}` {
		t.Errorf("OutputText = %q", resp.OutputText())
	}
	if resp.Text.Format.Type != "json_schema" {
		t.Errorf("text.format not echoed: %s", resp.Text.RawJSON())
	}
	req, _ := srv.LastRequest()
	if rf := req.ResponseFormat; rf == nil || rf.Type != "json_schema" || rf.Name != "out" {
		t.Errorf("response format = %+v", rf)
	}
	if req.HasWebSearch() {
		t.Error("HasWebSearch without tools")
	}
}

func TestResponsesIncomplete(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.StartT(t)
	client := newClient(srv)
	srv.Enqueue(fakeopenai.Reply{Text: "cut", FinishReason: "length"}, fakeopenai.Reply{Text: "cut", FinishReason: "length"})
	resp, err := client.Responses.New(context.Background(), webSearchParams("x"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != "incomplete" || resp.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("status = %q details = %+v", resp.Status, resp.IncompleteDetails)
	}
	stream := client.Responses.NewStreaming(context.Background(), webSearchParams("x"))
	var last string
	for stream.Next() {
		last = stream.Current().Type
	}
	if stream.Err() != nil || last != "response.incomplete" {
		t.Errorf("last event = %q err = %v", last, stream.Err())
	}
}
