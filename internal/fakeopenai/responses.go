package fakeopenai

import (
	"encoding/json"
	"strconv"
)

// Responses API wire shapes.

type respUsageJSON struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

type respReasoningJSON struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type respIncompleteJSON struct {
	Reason string `json:"reason"`
}

type respObjectJSON struct {
	ID             string `json:"id"`
	AccessPrograms struct {
		Cyber string `json:"cyber"`
	} `json:"access_programs"`
	Object             string              `json:"object"`
	CreatedAt          int64               `json:"created_at"`
	Status             string              `json:"status"`
	Background         bool                `json:"background"`
	CompletedAt        *int64              `json:"completed_at"`
	Error              *struct{}           `json:"error"`
	IncompleteDetails  *respIncompleteJSON `json:"incomplete_details"`
	Instructions       json.RawMessage     `json:"instructions"`
	MaxOutputTokens    *int64              `json:"max_output_tokens"`
	Metadata           struct{}            `json:"metadata"`
	Model              string              `json:"model"`
	Output             []any               `json:"output"`
	ParallelToolCalls  bool                `json:"parallel_tool_calls"`
	PreviousResponseID *string             `json:"previous_response_id"`
	Reasoning          respReasoningJSON   `json:"reasoning"`
	ServiceTier        string              `json:"service_tier"`
	Store              bool                `json:"store"`
	Temperature        float64             `json:"temperature"`
	Text               json.RawMessage     `json:"text"`
	ToolChoice         string              `json:"tool_choice"`
	Tools              json.RawMessage     `json:"tools"`
	TopP               float64             `json:"top_p"`
	Truncation         string              `json:"truncation"`
	Usage              *respUsageJSON      `json:"usage"`
	User               *string             `json:"user"`
}

type respTextPartJSON struct {
	Type        string     `json:"type"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
	Text        string     `json:"text"`
}

type respMessageJSON struct {
	ID      string             `json:"id"`
	Type    string             `json:"type"`
	Status  string             `json:"status"`
	Content []respTextPartJSON `json:"content"`
	Role    string             `json:"role"`
}

type respFunctionCallJSON struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

type respSearchActionJSON struct {
	Type  string `json:"type"`
	Query string `json:"query"`
}

type respWebSearchJSON struct {
	ID     string               `json:"id"`
	Type   string               `json:"type"`
	Status string               `json:"status"`
	Action respSearchActionJSON `json:"action"`
}

// Stream event shapes.

type evResponseJSON struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *respObjectJSON `json:"response"`
}

type evItemJSON struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	OutputIndex    int    `json:"output_index"`
	Item           any    `json:"item"`
}

type evItemProgressJSON struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	OutputIndex    int    `json:"output_index"`
	ItemID         string `json:"item_id"`
}

type evPartJSON struct {
	Type           string           `json:"type"`
	SequenceNumber int              `json:"sequence_number"`
	ItemID         string           `json:"item_id"`
	OutputIndex    int              `json:"output_index"`
	ContentIndex   int              `json:"content_index"`
	Part           respTextPartJSON `json:"part"`
}

type evTextJSON struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	ItemID         string     `json:"item_id"`
	OutputIndex    int        `json:"output_index"`
	ContentIndex   int        `json:"content_index"`
	Delta          *string    `json:"delta,omitempty"`
	Text           *string    `json:"text,omitempty"`
	Logprobs       []struct{} `json:"logprobs"`
}

type evArgsJSON struct {
	Type           string  `json:"type"`
	SequenceNumber int     `json:"sequence_number"`
	ItemID         string  `json:"item_id"`
	OutputIndex    int     `json:"output_index"`
	Delta          *string `json:"delta,omitempty"`
	Arguments      *string `json:"arguments,omitempty"`
}

var (
	emptyListJSON = json.RawMessage("[]")
	textFmtJSON   = json.RawMessage(`{"format":{"type":"text"}}`)
	noParts       = []struct{}{}
)

// respOutput builds the final output items: web searches, then the message
// (when there is text or nothing else), then function calls.
type respOutput struct {
	web     []respWebSearchJSON
	message *respMessageJSON
	calls   []respFunctionCallJSON
}

func buildOutput(pl *plan) respOutput {
	var o respOutput
	for i, q := range pl.web {
		o.web = append(o.web, respWebSearchJSON{
			ID: "ws_" + pl.id + "_" + strconv.Itoa(i), Type: "web_search_call", Status: "completed",
			Action: respSearchActionJSON{Type: "search", Query: q},
		})
	}
	if pl.text != "" || len(pl.calls) == 0 {
		o.message = &respMessageJSON{
			ID: "msg_" + pl.id, Type: "message", Status: "completed", Role: "assistant",
			Content: []respTextPartJSON{{Type: "output_text", Annotations: noParts, Logprobs: noParts, Text: pl.text}},
		}
	}
	for i, c := range pl.calls {
		o.calls = append(o.calls, respFunctionCallJSON{
			ID: "fc_" + pl.id + "_" + strconv.Itoa(i), Type: "function_call", Status: "completed",
			Arguments: c.Arguments, CallID: c.ID, Name: c.Name,
		})
	}
	return o
}

func (o respOutput) items() []any {
	items := make([]any, 0, len(o.web)+1+len(o.calls))
	for i := range o.web {
		items = append(items, &o.web[i])
	}
	if o.message != nil {
		items = append(items, o.message)
	}
	for i := range o.calls {
		items = append(items, &o.calls[i])
	}
	return items
}

func newRespObject(pl *plan, req *Request) *respObjectJSON {
	r := &respObjectJSON{
		ID: "resp_" + pl.id, Object: "response", CreatedAt: pl.created, Status: "in_progress",
		Instructions: nullJSON, Model: pl.model, Output: []any{}, ParallelToolCalls: true,
		ServiceTier: "default", Store: true, Temperature: 1, TopP: 1, ToolChoice: "auto",
		Text: textFmtJSON, Tools: emptyListJSON, Truncation: "disabled",
	}
	r.AccessPrograms.Cyber = "standard"
	if len(req.instructionsRaw) > 0 {
		r.Instructions = req.instructionsRaw
	}
	if len(req.textRaw) > 0 {
		r.Text = req.textRaw
	}
	if len(req.toolsRaw) > 0 {
		r.Tools = req.toolsRaw
	}
	if req.ReasoningEffort != "" {
		effort := req.ReasoningEffort
		r.Reasoning.Effort = &effort
	}
	if req.PreviousResponseID != "" {
		prev := req.PreviousResponseID
		r.PreviousResponseID = &prev
	}
	return r
}

func finishRespObject(r *respObjectJSON, pl *plan, out []any) {
	r.Output = out
	r.Status = "completed"
	if pl.finish == "length" {
		r.Status = "incomplete"
		r.IncompleteDetails = &respIncompleteJSON{Reason: "max_output_tokens"}
	} else {
		done := pl.created
		r.CompletedAt = &done
	}
	u := &respUsageJSON{InputTokens: pl.usage.PromptTokens, OutputTokens: pl.usage.CompletionTokens}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	r.Usage = u
}

func encodeResponse(p *payload, pl *plan, req *Request) {
	r := newRespObject(pl, req)
	finishRespObject(r, pl, buildOutput(pl).items())
	_ = p.enc.Encode(r)
}

// encodeResponsesStream emits the event sequence of the real API:
// response.created, response.in_progress, per item output_item.added ...
// output_item.done (with content_part/output_text or function_call_arguments
// or web_search_call progress events inside), then response.completed.
func encodeResponsesStream(p *payload, pl *plan, req *Request) {
	seq := 0
	next := func() int { seq++; return seq - 1 }

	r := newRespObject(pl, req)
	p.event("response.created", evResponseJSON{Type: "response.created", SequenceNumber: next(), Response: r})
	p.event("response.in_progress", evResponseJSON{Type: "response.in_progress", SequenceNumber: next(), Response: r})

	out := buildOutput(pl)
	idx := 0
	for i := range out.web {
		done := out.web[i]
		started := done
		started.Status = "in_progress"
		p.event("response.output_item.added", evItemJSON{Type: "response.output_item.added", SequenceNumber: next(), OutputIndex: idx, Item: &started})
		for _, t := range []string{"response.web_search_call.in_progress", "response.web_search_call.searching", "response.web_search_call.completed"} {
			p.event(t, evItemProgressJSON{Type: t, SequenceNumber: next(), OutputIndex: idx, ItemID: done.ID})
		}
		p.event("response.output_item.done", evItemJSON{Type: "response.output_item.done", SequenceNumber: next(), OutputIndex: idx, Item: &done})
		idx++
	}

	if m := out.message; m != nil {
		started := *m
		started.Status = "in_progress"
		started.Content = []respTextPartJSON{}
		p.event("response.output_item.added", evItemJSON{Type: "response.output_item.added", SequenceNumber: next(), OutputIndex: idx, Item: &started})
		part := respTextPartJSON{Type: "output_text", Annotations: noParts, Logprobs: noParts}
		p.event("response.content_part.added", evPartJSON{Type: "response.content_part.added", SequenceNumber: next(), ItemID: m.ID, OutputIndex: idx, Part: part})
		for _, piece := range pl.textChunks() {
			p.event("response.output_text.delta", evTextJSON{Type: "response.output_text.delta", SequenceNumber: next(), ItemID: m.ID, OutputIndex: idx, Delta: &piece, Logprobs: noParts})
		}
		text := pl.text
		p.event("response.output_text.done", evTextJSON{Type: "response.output_text.done", SequenceNumber: next(), ItemID: m.ID, OutputIndex: idx, Text: &text, Logprobs: noParts})
		part.Text = text
		p.event("response.content_part.done", evPartJSON{Type: "response.content_part.done", SequenceNumber: next(), ItemID: m.ID, OutputIndex: idx, Part: part})
		p.event("response.output_item.done", evItemJSON{Type: "response.output_item.done", SequenceNumber: next(), OutputIndex: idx, Item: m})
		idx++
	}

	for i := range out.calls {
		done := &out.calls[i]
		started := *done
		started.Status = "in_progress"
		started.Arguments = ""
		p.event("response.output_item.added", evItemJSON{Type: "response.output_item.added", SequenceNumber: next(), OutputIndex: idx, Item: &started})
		for _, piece := range splitN(done.Arguments, argPieceBytes) {
			p.event("response.function_call_arguments.delta", evArgsJSON{Type: "response.function_call_arguments.delta", SequenceNumber: next(), ItemID: done.ID, OutputIndex: idx, Delta: &piece})
		}
		args := done.Arguments
		p.event("response.function_call_arguments.done", evArgsJSON{Type: "response.function_call_arguments.done", SequenceNumber: next(), ItemID: done.ID, OutputIndex: idx, Arguments: &args})
		p.event("response.output_item.done", evItemJSON{Type: "response.output_item.done", SequenceNumber: next(), OutputIndex: idx, Item: done})
		idx++
	}

	p.markFinal()
	finishRespObject(r, pl, out.items())
	terminal := "response.completed"
	if r.Status == "incomplete" {
		terminal = "response.incomplete"
	}
	p.event(terminal, evResponseJSON{Type: terminal, SequenceNumber: next(), Response: r})
}
