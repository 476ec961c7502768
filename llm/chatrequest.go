package llm

import (
	"encoding/json"

	"github.com/switchyard/switchyard/internal/jsonw"
)

// The body of a streamed chat completion request, encoded by us: the same
// JSON openai-go's params produce (TestChatRequestMatchesOpenAIGo), without
// its reflection over every field of every message. openai-go still sends
// the request (base URL, auth, headers, errors).
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
	chatToolJSON struct {
		Type     string       `json:"type"`
		Function chatFunction `json:"function"`
	}
	chatFunction struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters,omitempty"`
	}
	chatRespFormatJSON struct {
		Type       string         `json:"type"`
		JSONSchema chatJSONSchema `json:"json_schema"`
	}
	chatJSONSchema struct {
		Name   string         `json:"name"`
		Schema map[string]any `json:"schema"`
	}
	chatStreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
)

// encodeChatRequest encodes req as a streamed chat completion request:
// the bytes json.Marshal gives for chatRequestJSON (the reference,
// TestChatRequestEncoderMatchesReference), written directly. The model
// and the messages, what every call has, are appended by hand (json's
// reflection over them was 3 % of a short run's CPU); tools and a
// response schema, maps of any, go through json.Marshal.
func encodeChatRequest(req Request) ([]byte, error) {
	n := 160
	for i := range req.Messages {
		n += len(req.Messages[i].Content) + 48
	}
	b := make([]byte, 0, n)
	b = append(b, `{"model":`...)
	b = jsonw.AppendString(b, req.Model)
	b = append(b, `,"messages":[`...)
	first := true
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case "system", "user", "tool", "assistant":
		default:
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, `{"role":`...)
		b = jsonw.AppendString(b, m.Role)
		if m.Role != "assistant" || m.Content != "" {
			b = append(b, `,"content":`...)
			b = jsonw.AppendString(b, m.Content)
		}
		if m.Role == "tool" && m.ToolCallID != "" {
			b = append(b, `,"tool_call_id":`...)
			b = jsonw.AppendString(b, m.ToolCallID)
		}
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for k, tc := range m.ToolCalls {
				if k > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"id":`...)
				b = jsonw.AppendString(b, tc.ID)
				b = append(b, `,"type":"function","function":{"arguments":`...)
				b = jsonw.AppendString(b, tc.Arguments)
				b = append(b, `,"name":`...)
				b = jsonw.AppendString(b, tc.Name)
				b = append(b, `}}`...)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(req.Tools) > 0 {
		tools := make([]chatToolJSON, 0, len(req.Tools))
		for _, t := range req.Tools {
			tools = append(tools, chatToolJSON{Type: "function", Function: chatFunction(t)})
		}
		j, err := json.Marshal(tools)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"tools":`...), j...)
	}
	if req.Effort != "" {
		b = append(b, `,"reasoning_effort":`...)
		b = jsonw.AppendString(b, req.Effort)
	}
	if req.Schema != nil {
		j, err := json.Marshal(&chatRespFormatJSON{Type: "json_schema", JSONSchema: chatJSONSchema{Name: "output", Schema: req.Schema}})
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"response_format":`...), j...)
	}
	b = append(b, `,"stream_options":{"include_usage":true},"stream":true}`...)
	return b, nil
}

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
