package fakeopenai

import (
	"encoding/json"
	"time"
)

// HandlerFunc computes the reply to a request. It runs on the request's own
// goroutine, so it must be safe for concurrent use when requests overlap.
type HandlerFunc func(req *Request) Reply

// ToolCall is a function call made by the (fake) model.
type ToolCall struct {
	ID        string // generated ("call_...") when empty
	Name      string
	Arguments string // JSON text; "{}" when empty. Sent verbatim, even if invalid.
}

// Usage overrides the estimated token counts of a reply.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
}

// Reply scripts one answer. The zero Reply is a successful empty answer.
//
// Fault fields are checked in this order after the latency wait:
// Hang, Reset (without TruncateStream), Status, Malformed, TruncateStream.
type Reply struct {
	Text string
	// Chunks, when set, are the exact streamed content deltas (Text is then
	// their concatenation and is ignored). Otherwise Text is split by words.
	Chunks    []string
	ToolCalls []ToolCall
	// WebSearch lists queries of web_search_call output items placed before the
	// message (Responses API only; ignored by chat completions).
	WebSearch []string
	// FinishReason overrides the chat finish_reason ("length", "content_filter"...).
	// "length" turns a Responses reply into status "incomplete".
	FinishReason string
	Usage        *Usage

	// Latency delays the first byte; zero means the server default
	// (WithLatency), negative means no delay at all.
	Latency time.Duration
	// ChunkDelay is the pause between streamed events; zero means the server
	// default (WithChunkDelay), negative means none.
	ChunkDelay time.Duration

	// Status >= 400 answers with an OpenAI-style JSON error body.
	Status       int
	ErrorMessage string        // default depends on Status
	RetryAfter   time.Duration // sent as Retry-After (and Retry-After-Ms); 429 always gets Retry-After
	// Malformed answers 200 with a body that is not valid JSON (or, when
	// streaming, an SSE event whose data is not valid JSON).
	Malformed bool
	// Hang never answers: the handler waits until the client gives up or the
	// server is closed (then the connection is dropped).
	Hang bool
	// Reset closes the TCP connection abruptly (RST) without any HTTP response.
	Reset bool
	// TruncateStream ends the body early: streams stop before the finish_reason
	// chunk / response.completed and never send [DONE]; non-streaming bodies are
	// cut in half. The end is a clean EOF unless Reset is also set, in which case
	// the connection is aborted after the partial body.
	TruncateStream bool
	// TruncateAfter is how many SSE events are sent before truncation
	// (0 = about half of the events that precede the finish).
	TruncateAfter int
}

// DefaultReply is what a server without queued replies or handler answers:
// "echo: <last user message>". When a JSON response format was requested it
// answers a JSON value matching the schema's shape instead, and on the
// Responses API it reports one web search when a web_search tool was offered.
func DefaultReply(req *Request) Reply {
	last := req.LastUserMessage()
	r := Reply{Text: "echo: " + last}
	if rf := req.ResponseFormat; rf != nil && (rf.Type == "json_object" || rf.Type == "json_schema") {
		v := sampleFromSchema(rf.Schema, r.Text, 0)
		if _, ok := v.(map[string]any); !ok && rf.Type == "json_object" {
			v = map[string]any{"echo": last}
		}
		b, err := json.Marshal(v)
		if err == nil {
			r.Text = string(b)
		}
	}
	if req.API == APIResponses && req.HasWebSearch() {
		r.WebSearch = []string{last}
	}
	return r
}

// sampleFromSchema builds a small value of the schema's shape: required (or
// all) object properties, first enum/const values, zero numbers, and text for
// strings. It is best effort; unknown schemas yield an object.
func sampleFromSchema(raw json.RawMessage, text string, depth int) any {
	var s map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return map[string]any{"echo": text}
	}
	return sampleValue(s, text, depth)
}

func sampleValue(s map[string]any, text string, depth int) any {
	if depth > 8 {
		return nil
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			if m, ok := alts[0].(map[string]any); ok {
				return sampleValue(m, text, depth+1)
			}
		}
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	switch typ {
	case "string":
		return text
	case "integer", "number":
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	case "array":
		return []any{}
	}
	obj := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	var keys []string
	if req, ok := s["required"].([]any); ok {
		for _, k := range req {
			if ks, ok := k.(string); ok {
				keys = append(keys, ks)
			}
		}
	} else {
		for k := range props {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		sub, _ := props[k].(map[string]any)
		if sub == nil {
			obj[k] = text
			continue
		}
		obj[k] = sampleValue(sub, text, depth+1)
	}
	return obj
}

// splitWords splits text into token-like pieces, each word carrying its
// leading whitespace ("Hello", " world"), the way real streams deliver deltas.
func splitWords(text string) []string {
	if text == "" {
		return nil
	}
	out := make([]string, 0, 1+len(text)/5)
	start := 0
	for i := 1; i < len(text); i++ {
		if isSpace(text[i]) && !isSpace(text[i-1]) {
			out = append(out, text[start:i])
			start = i
		}
	}
	return append(out, text[start:])
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// splitN splits s into pieces of at most n bytes without breaking UTF-8 runes.
func splitN(s string, n int) []string {
	if len(s) <= n {
		return []string{s}
	}
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func estimateTokens(s string) int64 {
	if s == "" {
		return 0
	}
	return int64(len(s)+3) / 4
}
