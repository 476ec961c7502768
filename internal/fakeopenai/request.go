package fakeopenai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// API names the OpenAI endpoint family a request was sent to.
const (
	APIChat      = "chat"      // POST /v1/chat/completions
	APIResponses = "responses" // POST /v1/responses
)

// Request is the parsed essence of one completion request, as a script sees it.
// Values in the request log are shared between readers; treat them as read-only.
type Request struct {
	Seq          int64  // arrival number: TotalRequests at arrival (1-based, restarts on Reset)
	API          string // APIChat or APIResponses
	Model        string
	Messages     []Message // chat messages, or Responses input items normalised to messages
	Instructions string    // Responses "instructions" (chat system prompts stay in Messages)
	Tools        []Tool
	// ReasoningEffort is chat "reasoning_effort" or Responses "reasoning.effort".
	ReasoningEffort    string
	Stream             bool
	IncludeUsage       bool            // chat stream_options.include_usage
	ResponseFormat     *ResponseFormat // nil when the request did not ask for one
	PreviousResponseID string          // Responses previous_response_id
	Header             http.Header     // request headers (Authorization included); the request log keeps a copy
	Body               []byte          // raw request body
	Received           time.Time
	// ParseError is set when the body could not be understood; the client got a 400.
	ParseError string

	// Raw request fields echoed back in Responses API objects.
	toolsRaw, textRaw, instructionsRaw json.RawMessage
}

// Message is one conversation turn. Tool results arrive as Role "tool" with
// ToolCallID set (chat role "tool" messages and Responses function_call_output
// items alike); assistant tool calls arrive as Role "assistant" with ToolCalls.
type Message struct {
	Role       string // system, developer, user, assistant, tool
	Content    string // text parts concatenated
	ToolCallID string
	ToolCalls  []ToolCall
	Name       string
	// Type is the Responses input item type ("message", "function_call",
	// "function_call_output", ...); "message" for chat messages.
	Type string
}

// Tool is a tool offered to the model.
type Tool struct {
	Type        string // "function", "web_search", "web_search_preview", "file_search", ...
	Name        string // function name; empty for built-in tools
	Description string
	Parameters  json.RawMessage
}

// ResponseFormat is the requested structured output format.
type ResponseFormat struct {
	Type   string // "text", "json_object" or "json_schema"
	Name   string
	Schema json.RawMessage
	Strict bool
}

// LastUserMessage returns the content of the last message with role "user".
func (r *Request) LastUserMessage() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// ToolResults returns the tool-result messages in order.
func (r *Request) ToolResults() []Message {
	var out []Message
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

// HasTool reports whether a tool with this type or function name was offered.
func (r *Request) HasTool(typeOrName string) bool {
	for _, t := range r.Tools {
		if t.Type == typeOrName || (t.Name != "" && t.Name == typeOrName) {
			return true
		}
	}
	return false
}

// HasWebSearch reports whether any web search tool flavour was offered.
func (r *Request) HasWebSearch() bool {
	for _, t := range r.Tools {
		if strings.HasPrefix(t.Type, "web_search") {
			return true
		}
	}
	return false
}

// Wire shapes: only the fields the fake needs. Union-typed fields stay raw so
// that any shape the real API accepts decodes without error.
type wireRequest struct {
	Model         string            `json:"model"`
	Messages      []wireChatMessage `json:"messages"`
	Input         json.RawMessage   `json:"input"`
	Instructions  json.RawMessage   `json:"instructions"`
	Tools         json.RawMessage   `json:"tools"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	ReasoningEffort string `json:"reasoning_effort"`
	Reasoning       *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	ResponseFormat     *wireFormat     `json:"response_format"`
	Text               json.RawMessage `json:"text"`
	PreviousResponseID string          `json:"previous_response_id"`
}

type wireChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type wireTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Function    *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
	Custom *struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"custom"`
}

type wireFormat struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Schema     json.RawMessage `json:"schema"`
	Strict     *bool           `json:"strict"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
}

type wireInputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

type wirePart struct {
	Type string          `json:"type"`
	Text json.RawMessage `json:"text"`
}

// errBadRequest marks client mistakes that map to HTTP 400.
var errBadRequest = errors.New("invalid request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadRequest}, args...)...)
}

// parseRequest fills req from body for the given API. It never panics on
// arbitrary input; errors wrap errBadRequest and name the offending field.
func parseRequest(api string, body []byte, req *Request) error {
	req.API = api
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return badRequest("body is not a valid JSON object: %v", err)
	}
	req.Model = w.Model
	req.Stream = w.Stream
	req.PreviousResponseID = w.PreviousResponseID
	if w.StreamOptions != nil {
		req.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	req.ReasoningEffort = w.ReasoningEffort
	if w.Reasoning != nil && w.Reasoning.Effort != "" {
		req.ReasoningEffort = w.Reasoning.Effort
	}
	var tools []wireTool
	if err := unmarshalOptional(w.Tools, &tools); err != nil {
		return badRequest("tools: expected an array of tool objects: %v", err)
	}
	for _, t := range tools {
		tool := Tool{Type: t.Type, Name: t.Name, Description: t.Description, Parameters: t.Parameters}
		if t.Function != nil {
			tool.Name, tool.Description, tool.Parameters = t.Function.Name, t.Function.Description, t.Function.Parameters
		}
		if t.Custom != nil {
			tool.Name, tool.Description = t.Custom.Name, t.Custom.Description
		}
		req.Tools = append(req.Tools, tool)
	}
	format := w.ResponseFormat
	if api == APIResponses {
		var text struct {
			Format *wireFormat `json:"format"`
		}
		if err := unmarshalOptional(w.Text, &text); err != nil {
			return badRequest("text: expected an object: %v", err)
		}
		format = text.Format
		req.toolsRaw, req.textRaw = nullToEmpty(w.Tools), nullToEmpty(w.Text)
		req.instructionsRaw = nullToEmpty(w.Instructions)
	}
	if format != nil {
		rf := &ResponseFormat{Type: format.Type, Name: format.Name, Schema: format.Schema, Strict: format.Strict != nil && *format.Strict}
		if js := format.JSONSchema; js != nil {
			rf.Name, rf.Schema, rf.Strict = js.Name, js.Schema, js.Strict != nil && *js.Strict
		}
		req.ResponseFormat = rf
	}
	if req.Model == "" {
		return badRequest("missing required parameter 'model'")
	}
	if api == APIChat {
		return parseChatMessages(w.Messages, req)
	}
	if err := parseInstructions(w.Instructions, req); err != nil {
		return err
	}
	return parseInput(w.Input, req)
}

// unmarshalOptional decodes raw into v unless it is absent or null.
func unmarshalOptional(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, v)
}

func nullToEmpty(raw json.RawMessage) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return raw
}

func parseChatMessages(msgs []wireChatMessage, req *Request) error {
	if len(msgs) == 0 {
		return badRequest("'messages' must be a non-empty array")
	}
	req.Messages = make([]Message, 0, len(msgs))
	for i, m := range msgs {
		if m.Role == "" {
			return badRequest("messages[%d].role is missing", i)
		}
		content, err := contentText(m.Content)
		if err != nil {
			return badRequest("messages[%d].content: %v", i, err)
		}
		msg := Message{Role: m.Role, Content: content, Name: m.Name, ToolCallID: m.ToolCallID, Type: "message"}
		if m.Role == "tool" && m.ToolCallID == "" {
			return badRequest("messages[%d].tool_call_id is required for role 'tool'", i)
		}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	return nil
}

func parseInstructions(raw json.RawMessage, req *Request) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &req.Instructions); err != nil {
			return badRequest("instructions: %v", err)
		}
		return nil
	}
	// Instructions may also be a list of input items; keep them as messages.
	var items []wireInputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return badRequest("instructions: expected string or array of input items")
	}
	return appendInputItems(items, "instructions", req)
}

func parseInput(raw json.RawMessage, req *Request) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badRequest("input: %v", err)
		}
		req.Messages = append(req.Messages, Message{Role: "user", Content: s, Type: "message"})
		return nil
	}
	var items []wireInputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return badRequest("input: expected string or array of input items")
	}
	return appendInputItems(items, "input", req)
}

func appendInputItems(items []wireInputItem, field string, req *Request) error {
	for i, it := range items {
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message" // EasyInputMessage omits the type
		}
		switch typ {
		case "message":
			content, err := contentText(it.Content)
			if err != nil {
				return badRequest("%s[%d].content: %v", field, i, err)
			}
			req.Messages = append(req.Messages, Message{Role: it.Role, Content: content, Type: typ})
		case "function_call":
			var args string
			if len(it.Arguments) > 0 {
				if err := json.Unmarshal(it.Arguments, &args); err != nil {
					return badRequest("%s[%d].arguments: expected a string", field, i)
				}
			}
			req.Messages = append(req.Messages, Message{
				Role: "assistant", Type: typ,
				ToolCalls: []ToolCall{{ID: it.CallID, Name: it.Name, Arguments: args}},
			})
		case "function_call_output":
			if it.CallID == "" {
				return badRequest("%s[%d].call_id is required for function_call_output", field, i)
			}
			out, err := contentText(it.Output)
			if err != nil {
				return badRequest("%s[%d].output: %v", field, i, err)
			}
			req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: it.CallID, Content: out, Type: typ})
		case "":
			return badRequest("%s[%d]: item has neither type nor role", field, i)
		default:
			// Other item kinds (reasoning, web_search_call, item_reference...) are
			// kept by type so scripts can still see they were sent.
			req.Messages = append(req.Messages, Message{Role: it.Role, Type: typ})
		}
	}
	return nil
}

// contentText flattens a string-or-parts content value to plain text.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	case '[':
		var parts []wirePart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", errors.New("expected string or array of content parts")
		}
		var sb strings.Builder
		for j, p := range parts {
			if len(p.Text) == 0 || string(p.Text) == "null" {
				continue // image, file, audio parts carry no text
			}
			var s string
			if err := json.Unmarshal(p.Text, &s); err != nil {
				return "", fmt.Errorf("part %d: text must be a string", j)
			}
			sb.WriteString(s)
		}
		return sb.String(), nil
	default:
		return "", errors.New("expected string or array of content parts")
	}
}
