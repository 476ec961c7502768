package llm

import (
	"encoding/json"

	"github.com/switchyard/switchyard/internal/jsonw"
)

// The parts of a chat completion request body that encodeChatRequest
// leaves to encoding/json (tools, a response schema: maps of any).
type (
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
)

// encodeChatRequest encodes req as a streamed chat completion request:
// the bytes encoding/json wrote for it (the former encoder, kept in the
// tests as encodeChatRequestReference), written directly. The model
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
