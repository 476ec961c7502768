package llm

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
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

// genString is a string of pieces that JSON escapes differently: plain
// text, quotes and backslashes, control characters, HTML characters,
// multi-byte runes, U+2028/U+2029 and invalid UTF-8.
func genString(r *rand.Rand) string {
	pieces := []string{"", "a", "hello world", `"`, `\`, "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
		"<", ">", "&", "é", "ünïcode", "日本", "🙂", "\u2028", "\u2029", "\xff", "\xe2\x82", "\xc3", "{\"k\":1}", " "}
	var sb strings.Builder
	for range r.IntN(8) {
		sb.WriteString(pieces[r.IntN(len(pieces))])
	}
	return sb.String()
}

func genRequest(r *rand.Rand) Request {
	req := Request{Model: genString(r)}
	roles := []string{"system", "user", "assistant", "tool", "developer", ""}
	for range r.IntN(6) {
		m := Message{Role: roles[r.IntN(len(roles))], Content: genString(r)}
		if r.IntN(2) == 0 {
			m.ToolCallID = genString(r)
		}
		for range r.IntN(3) {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: genString(r), Name: genString(r), Arguments: genString(r)})
		}
		req.Messages = append(req.Messages, m)
	}
	for range r.IntN(3) {
		t := ToolSpec{Name: genString(r), Description: genString(r)}
		if r.IntN(2) == 0 {
			t.Parameters = map[string]any{"type": "object", genString(r): genString(r)}
		}
		req.Tools = append(req.Tools, t)
	}
	if r.IntN(2) == 0 {
		req.Effort = genString(r)
	}
	if r.IntN(3) == 0 {
		req.Schema = map[string]any{"type": "object", "properties": map[string]any{genString(r): map[string]any{"type": "string"}}}
	}
	return req
}

// TestChatRequestEncoderMatchesReference: the hand-written encoder writes
// the bytes encoding/json writes for the same request, on generated
// requests full of characters JSON escapes.
func TestChatRequestEncoderMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		req := genRequest(r)
		got, err := encodeChatRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeChatRequestReference(req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d (%+v):\n got  %s\n want %s", i, req, got, want)
		}
	}
}

func BenchmarkEncodeChatRequest(b *testing.B) {
	req := Request{Model: "gpt-5-mini", Messages: []Message{
		{Role: "system", Content: "You are a helpful assistant.\nAnswer briefly."},
		{Role: "user", Content: "Summarize the findings of the previous step: the build passed, 3 tests <flaky>."}}}
	for _, c := range []struct {
		name string
		enc  func(Request) ([]byte, error)
	}{{"hand", encodeChatRequest}, {"reference", encodeChatRequestReference}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := c.enc(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The body of a streamed chat completion request as encoding/json writes
// it (the former encoder): what encodeChatRequest must equal.
type (
	chatRequestJSON struct {
		Model           string              `json:"model"`
		Messages        []chatMessageJSON   `json:"messages"`
		Tools           []chatToolJSON      `json:"tools,omitempty"`
		ReasoningEffort string              `json:"reasoning_effort,omitempty"`
		ResponseFormat  *chatRespFormatJSON `json:"response_format,omitempty"`
		StreamOptions   chatStreamOptions   `json:"stream_options"`
		Stream          bool                `json:"stream"`
	}
	chatMessageJSON struct {
		Role       string             `json:"role"`
		Content    *string            `json:"content,omitempty"`
		ToolCallID string             `json:"tool_call_id,omitempty"`
		ToolCalls  []chatToolCallJSON `json:"tool_calls,omitempty"`
	}
	chatToolCallJSON struct {
		ID       string           `json:"id"`
		Type     string           `json:"type"`
		Function chatFunctionCall `json:"function"`
	}
	chatFunctionCall struct {
		Arguments string `json:"arguments"`
		Name      string `json:"name"`
	}
	chatStreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
)

// encodeChatRequestReference is encodeChatRequest through encoding/json:
// what the hand-written encoder must equal, byte for byte.
func encodeChatRequestReference(req Request) ([]byte, error) {
	body := chatRequestJSON{Model: req.Model, ReasoningEffort: req.Effort, Stream: true,
		// Without this a streamed chat completion reports no usage at all;
		// with it the server sends a last chunk with empty choices and the
		// usage.
		StreamOptions: chatStreamOptions{IncludeUsage: true},
		Messages:      make([]chatMessageJSON, 0, len(req.Messages))}
	for i := range req.Messages {
		m := &req.Messages[i]
		cm := chatMessageJSON{Role: m.Role}
		switch m.Role {
		case "system", "user":
			cm.Content = &m.Content
		case "tool":
			cm.Content, cm.ToolCallID = &m.Content, m.ToolCallID
		case "assistant":
			if m.Content != "" {
				cm.Content = &m.Content
			}
			for _, tc := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, chatToolCallJSON{ID: tc.ID, Type: "function",
					Function: chatFunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
			}
		default:
			continue
		}
		body.Messages = append(body.Messages, cm)
	}
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, chatToolJSON{Type: "function",
			Function: chatFunction(t)})
	}
	if req.Schema != nil {
		body.ResponseFormat = &chatRespFormatJSON{Type: "json_schema", JSONSchema: chatJSONSchema{Name: "output", Schema: req.Schema}}
	}
	return json.Marshal(body)
}
