package llm

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// openAIGoParams builds a request the way openai-go's own params do (what
// viaChat sent before it encoded the body itself).
func openAIGoParams(req Request) openai.ChatCompletionNewParams {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case "user":
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case "tool":
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case "assistant":
			am := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" {
				am.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		}
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: t.Parameters,
		}))
	}
	if req.Effort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(req.Effort)
	}
	if req.Schema != nil {
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "output", Schema: req.Schema},
			},
		}
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	return params
}

// TestChatRequestMatchesOpenAIGo: our request body is the JSON openai-go
// sends for the same request (plus "stream": true), for every message
// shape, tools, effort and a response schema.
func TestChatRequestMatchesOpenAIGo(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	cases := []Request{
		{Model: "gpt-5-mini", Messages: []Message{{Role: "user", Content: "hi"}}},
		{Model: "m", Effort: "low", Schema: schema, Messages: []Message{
			{Role: "system", Content: "sys \"quoted\" <html> & ünïcode"},
			{Role: "user", Content: "line1\nline2"},
			{Role: "assistant", Content: "", ToolCalls: []ToolCall{{ID: "c1", Name: "Read", Arguments: `{"file_path":"a"}`}, {ID: "c2", Name: "Bash", Arguments: `not json`}}},
			{Role: "tool", ToolCallID: "c1", Content: "file text"},
			{Role: "tool", ToolCallID: "c2", Content: ""},
			{Role: "assistant", Content: "done"},
		}, Tools: []ToolSpec{{Name: "Read", Description: "read a file", Parameters: schema}, {Name: "Nothing", Description: ""}}},
	}
	for i, req := range cases {
		ours, err := encodeChatRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := json.Marshal(openAIGoParams(req))
		if err != nil {
			t.Fatal(err)
		}
		var a, b map[string]any
		if err := json.Unmarshal(ours, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(theirs, &b); err != nil {
			t.Fatal(err)
		}
		b["stream"] = true // openai-go's NewStreaming adds it
		if !reflect.DeepEqual(a, b) {
			t.Errorf("case %d:\n ours   %s\n theirs %s", i, ours, theirs)
		}
	}
}
