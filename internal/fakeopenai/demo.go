package fakeopenai

import (
	"encoding/json"
	"strings"
)

// DemoTriggers are the phrases (case-insensitive) in the last user message
// that make DemoReply call every function tool it was offered. "use
// <toolname>" calls that one tool.
var DemoTriggers = []string{"call subagents", "call the subagents", "delegate", "use tools", "use your tools"}

// demoChunks is how many content deltas a DemoReply streams.
const demoChunks = 4

// DemoReply is the reply of `switchyard fake-llm`: DefaultReply's text,
// streamed in a few deltas, and tool calls when the prompt asks for them.
//
// When the last user message contains "use <toolname>" for an offered
// function tool, or one of DemoTriggers ("delegate", "call subagents", ...)
// with function tools offered, the model calls those tools, each with
// arguments shaped by the tool's parameters schema (string fields get the
// user message). Once the results are back it answers "echo: <message>"
// followed by one line per result: "<toolname>: <result>".
func DemoReply(req *Request) Reply {
	if res := req.ToolResults(); len(res) > 0 {
		return chunked(Reply{Text: demoSummary(req, res)})
	}
	if calls := demoToolCalls(req); len(calls) > 0 {
		return Reply{ToolCalls: calls}
	}
	return chunked(DefaultReply(req))
}

// demoToolCalls picks the offered function tools the user message asks for.
func demoToolCalls(req *Request) []ToolCall {
	msg := req.LastUserMessage()
	lower := strings.ToLower(msg)
	all := false
	for _, t := range DemoTriggers {
		if strings.Contains(lower, t) {
			all = true
			break
		}
	}
	var calls []ToolCall
	for _, t := range req.Tools {
		if t.Name == "" || (t.Type != "" && t.Type != "function") {
			continue
		}
		if !all && !mentionsTool(lower, strings.ToLower(t.Name)) {
			continue
		}
		args, err := json.Marshal(sampleFromSchema(t.Parameters, msg, 0))
		if err != nil {
			args = []byte("{}")
		}
		calls = append(calls, ToolCall{Name: t.Name, Arguments: string(args)})
	}
	return calls
}

// mentionsTool reports whether msg says "use <name>" with name ending at a
// word boundary (so "use foo" does not call "foo_bar").
func mentionsTool(msg, name string) bool {
	needle := "use " + name
	for i := 0; ; {
		j := strings.Index(msg[i:], needle)
		if j < 0 {
			return false
		}
		end := i + j + len(needle)
		if end == len(msg) || !isNameByte(msg[end]) {
			return true
		}
		i += j + 1
	}
}

func isNameByte(b byte) bool {
	return b == '_' || b == '-' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9'
}

// demoSummary answers after tool calls: the echo, then each tool's result.
func demoSummary(req *Request, results []Message) string {
	names := map[string]string{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
		}
	}
	var sb strings.Builder
	sb.WriteString("echo: ")
	sb.WriteString(req.LastUserMessage())
	for _, r := range results {
		name := names[r.ToolCallID]
		if name == "" {
			name = r.ToolCallID
		}
		sb.WriteString("\n")
		sb.WriteString(name)
		sb.WriteString(": ")
		sb.WriteString(r.Content)
	}
	return sb.String()
}

// chunked splits a reply's text into demoChunks deltas of whole words.
func chunked(r Reply) Reply {
	words := splitWords(r.Text)
	if len(words) < 2 {
		return r
	}
	n := min(demoChunks, len(words))
	r.Chunks = make([]string, 0, n)
	for i := range n {
		lo, hi := i*len(words)/n, (i+1)*len(words)/n
		r.Chunks = append(r.Chunks, strings.Join(words[lo:hi], ""))
	}
	return r
}
