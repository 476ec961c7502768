package fakeopenai

import "encoding/json"

// Chat Completions wire shapes, field for field what api.openai.com sends.

type chatUsageJSON struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
		AudioTokens  int64 `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int64 `json:"reasoning_tokens"`
		AudioTokens              int64 `json:"audio_tokens"`
		AcceptedPredictionTokens int64 `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int64 `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

type chatFunctionJSON struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatToolCallJSON struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatFunctionJSON `json:"function"`
}

type chatMessageJSON struct {
	Role        string             `json:"role"`
	Content     *string            `json:"content"`
	Refusal     *string            `json:"refusal"`
	ToolCalls   []chatToolCallJSON `json:"tool_calls,omitempty"`
	Annotations []struct{}         `json:"annotations"`
}

type chatChoiceJSON struct {
	Index        int             `json:"index"`
	Message      chatMessageJSON `json:"message"`
	Logprobs     *struct{}       `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type chatCompletionJSON struct {
	ID                string           `json:"id"`
	Object            string           `json:"object"`
	Created           int64            `json:"created"`
	Model             string           `json:"model"`
	Choices           []chatChoiceJSON `json:"choices"`
	Usage             chatUsageJSON    `json:"usage"`
	ServiceTier       string           `json:"service_tier"`
	SystemFingerprint string           `json:"system_fingerprint"`
}

type chunkFunctionJSON struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chunkToolCallJSON struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function chunkFunctionJSON `json:"function"`
}

type chunkDeltaJSON struct {
	Role      string              `json:"role,omitempty"`
	Content   *string             `json:"content,omitempty"`
	ToolCalls []chunkToolCallJSON `json:"tool_calls,omitempty"`
}

type chunkChoiceJSON struct {
	Index        int            `json:"index"`
	Delta        chunkDeltaJSON `json:"delta"`
	Logprobs     *struct{}      `json:"logprobs"`
	FinishReason *string        `json:"finish_reason"`
}

type chunkJSON struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	ServiceTier       string            `json:"service_tier"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []chunkChoiceJSON `json:"choices"`
	// Usage is null on every chunk but the last when include_usage is set,
	// and absent otherwise, as on the real API.
	Usage json.RawMessage `json:"usage,omitempty"`
}

const fakeFingerprint = "fp_fakeopenai"

func chatUsage(u Usage) chatUsageJSON {
	return chatUsageJSON{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
}

func encodeChat(p *payload, pl *plan) {
	msg := chatMessageJSON{Role: "assistant", Annotations: []struct{}{}}
	// The real API sends content null when the model only called tools.
	if pl.text != "" || len(pl.calls) == 0 {
		text := pl.text
		msg.Content = &text
	}
	for _, c := range pl.calls {
		msg.ToolCalls = append(msg.ToolCalls, chatToolCallJSON{ID: c.ID, Type: "function", Function: chatFunctionJSON{Name: c.Name, Arguments: c.Arguments}})
	}
	_ = p.enc.Encode(chatCompletionJSON{
		ID:                "chatcmpl-" + pl.id,
		Object:            "chat.completion",
		Created:           pl.created,
		Model:             pl.model,
		Choices:           []chatChoiceJSON{{Index: 0, Message: msg, FinishReason: pl.finish}},
		Usage:             chatUsage(pl.usage),
		ServiceTier:       "default",
		SystemFingerprint: fakeFingerprint,
	})
}

var nullJSON = json.RawMessage("null")

// encodeChatStream emits: a role chunk, content deltas, tool-call deltas
// (id/type/name first, then argument pieces), the finish_reason chunk, an
// optional usage chunk, and [DONE].
func encodeChatStream(p *payload, pl *plan, includeUsage bool) {
	c := chunkJSON{
		ID:                "chatcmpl-" + pl.id,
		Object:            "chat.completion.chunk",
		Created:           pl.created,
		Model:             pl.model,
		ServiceTier:       "default",
		SystemFingerprint: fakeFingerprint,
		Choices:           make([]chunkChoiceJSON, 1),
	}
	if includeUsage {
		c.Usage = nullJSON
	}
	choice := &c.Choices[0]

	empty := ""
	choice.Delta = chunkDeltaJSON{Role: "assistant", Content: &empty}
	p.event("", &c)

	for _, piece := range pl.textChunks() {
		choice.Delta = chunkDeltaJSON{Content: &piece}
		p.event("", &c)
	}

	tc := make([]chunkToolCallJSON, 1)
	for i, call := range pl.calls {
		tc[0] = chunkToolCallJSON{Index: i, ID: call.ID, Type: "function", Function: chunkFunctionJSON{Name: call.Name}}
		choice.Delta = chunkDeltaJSON{ToolCalls: tc}
		p.event("", &c)
		for _, piece := range splitN(call.Arguments, argPieceBytes) {
			tc[0] = chunkToolCallJSON{Index: i, Function: chunkFunctionJSON{Arguments: piece}}
			p.event("", &c)
		}
	}

	p.markFinal()
	finish := pl.finish
	choice.Delta = chunkDeltaJSON{}
	choice.FinishReason = &finish
	p.event("", &c)

	if includeUsage {
		u, _ := json.Marshal(chatUsage(pl.usage))
		c.Choices = []chunkChoiceJSON{}
		c.Usage = u
		p.event("", &c)
	}
	p.rawEvent("data: [DONE]\n\n")
}
