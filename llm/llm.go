// Package llm talks to OpenAI-compatible servers (OpenAI, Ollama, vLLM, LM
// Studio, ...) through openai-go: chat completions and the Responses API,
// streaming, tool calls, retries with backoff, and idle timeouts.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// ErrNotConfigured: neither an API key nor a base URL was given.
var ErrNotConfigured = errors.New("no LLM configured: set OPENAI_API_KEY or OPENAI_BASE_URL")

// Config configures the OpenAI-compatible provider.
type Config struct {
	APIKey  string
	BaseURL string
	// DefaultModel is used when a node names none.
	DefaultModel string
	// Responses makes the Responses API the default (Chat Completions
	// otherwise); nodes with web search always use it.
	Responses bool
	// MaxAttempts bounds tries of one call on transient errors (default 4).
	MaxAttempts int
	// RetryBase is the first backoff delay (default 500ms), doubled per try.
	RetryBase time.Duration
	// RequestTimeout bounds one HTTP exchange (default 10 minutes).
	RequestTimeout time.Duration
	// MaxConns is how many calls may be in flight at once (the engine's
	// cap on LLM calls): the default client keeps that many connections
	// open between calls, at least defaultIdleConns. Ignored with
	// HTTPClient.
	MaxConns   int
	HTTPClient *http.Client
	// Transport replaces the default client's connections (benchmarks: an
	// in-process fake) while keeping the rest of its path. Ignored with
	// HTTPClient.
	Transport http.RoundTripper
}

// defaultIdleConns is the least the default client keeps open.
const defaultIdleConns = 512

// DefaultModel is the model used when neither the node nor the
// configuration names one.
const DefaultModel = "gpt-5-mini"

// ConfigFromEnv reads OPENAI_API_KEY, OPENAI_BASE_URL, SWITCHYARD_MODEL
// and SWITCHYARD_LLM_API (chat|responses). ok is false when neither key
// nor base URL is set: no LLM is configured.
func ConfigFromEnv() (cfg Config, ok bool) {
	cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	cfg.BaseURL = os.Getenv("OPENAI_BASE_URL")
	cfg.DefaultModel = os.Getenv("SWITCHYARD_MODEL")
	cfg.Responses = strings.EqualFold(os.Getenv("SWITCHYARD_LLM_API"), "responses")
	return cfg, cfg.APIKey != "" || cfg.BaseURL != ""
}

// Anthropic's OpenAI-compatible endpoint and the model Claude nodes use
// when they name none.
const (
	ClaudeBaseURL      = "https://api.anthropic.com/v1/"
	DefaultClaudeModel = "claude-sonnet-4-5"
)

// ClaudeConfigFromEnv reads ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (default
// Anthropic's OpenAI-compatible endpoint) and SWITCHYARD_CLAUDE_MODEL. ok
// is false without a key (a base URL alone counts, for local stand-ins).
func ClaudeConfigFromEnv() (cfg Config, ok bool) {
	cfg.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	cfg.BaseURL = os.Getenv("ANTHROPIC_BASE_URL")
	ok = cfg.APIKey != "" || cfg.BaseURL != ""
	if cfg.BaseURL == "" {
		cfg.BaseURL = ClaudeBaseURL
	}
	cfg.DefaultModel = os.Getenv("SWITCHYARD_CLAUDE_MODEL")
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = DefaultClaudeModel
	}
	return cfg, ok
}

// Client talks to an OpenAI-compatible server through openai-go.
type Client struct {
	cfg    Config
	client openai.Client
}

// New builds the provider; it needs an API key or a base URL.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		return nil, ErrNotConfigured
	}
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = DefaultModel
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 4
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 500 * time.Millisecond
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Minute
	}
	key := cfg.APIKey
	if key == "" {
		key = "none" // local servers (Ollama, vLLM) accept any key
	}
	// Retries are ours, not the SDK's, so each failed attempt shows in the log.
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(0)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	switch {
	case cfg.HTTPClient != nil:
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	case cfg.Transport != nil:
		opts = append(opts, option.WithHTTPClient(directDoer{inMemoryBody{newDialGate(cfg.Transport)}}))
	default:
		// Go's default keeps 2 idle connections per host: with many LLM
		// calls in flight against one endpoint, connections would be
		// closed and dialed again for nearly every call. As many as may
		// be in flight: a fan-out of 1,000 branches (serve
		// --max-llm-calls 1008) kept 512 and dialed the rest again each
		// time, 30 ms of its 490 (switchyard load fanout --repeat).
		// Plain http:// endpoints are called on the caller's goroutine
		// (h1Transport); https:// and proxied ones go through net/http.
		opts = append(opts, option.WithHTTPClient(directDoer{inMemoryBody{newDialGate(newH1Transport(newTransport(cfg.MaxConns), max(cfg.MaxConns, defaultIdleConns)))}}))
	}
	return &Client{cfg: cfg, client: openai.NewClient(opts...)}, nil
}

// newTransport is the default client's transport, for up to maxConns
// calls in flight.
func newTransport(maxConns int) *http.Transport {
	idle := max(maxConns, defaultIdleConns)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = idle
	tr.MaxIdleConnsPerHost = idle
	// A request (headers, system prompt, history, tool schemas) is
	// often over the default 4 KiB buffer, which splits it into two
	// writes; 64 KiB sends most in one.
	tr.WriteBufferSize = 64 << 10
	return tr
}

// directDoer sends a request through its transport without http.Client,
// whose redirect bookkeeping copies every request's headers (7 of an
// agent call's allocations) for redirects an LLM endpoint does not send.
// A redirect is an error naming where it leads, not retried, so the API
// key never follows one to another origin. Errors read as http.Client's
// do.
type directDoer struct{ rt http.RoundTripper }

func (d directDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.rt.RoundTrip(req)
	if err != nil {
		op := req.Method
		if op != "" {
			op = op[:1] + strings.ToLower(op[1:])
		}
		return nil, &url.Error{Op: op, URL: req.URL.String(), Err: err}
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
		loc := resp.Header.Get("Location")
		_ = resp.Body.Close()
		return nil, &CallError{Status: resp.StatusCode, Err: fmt.Errorf(
			"LLM request failed: %s answered %d, a redirect to %q, which is not followed (the API key stays with the base URL's origin): make the base URL the address it leads to",
			req.URL, resp.StatusCode, loc)}
	}
	return resp, nil
}

// inMemoryBody hands the transport a request's body as the in-memory
// reader GetBody makes. The SDK wraps bodies in its own type, which
// net/http cannot tell is in memory, so it flushes the headers in a write
// of their own before the body: two syscalls per call instead of one.
type inMemoryBody struct{ next http.RoundTripper }

func (t inMemoryBody) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || req.GetBody == nil || req.ContentLength <= 0 {
		return t.next.RoundTrip(req)
	}
	body, err := req.GetBody()
	if err != nil {
		return t.next.RoundTrip(req)
	}
	_ = req.Body.Close() // a RoundTripper closes the body it was given
	// A shallow copy, as Request.WithContext makes: the transport only
	// reads the headers, so they need no deep copy.
	r := new(http.Request)
	*r = *req
	r.Body = body
	return t.next.RoundTrip(r)
}

// Model resolves a node's model name.
func (l *Client) Model(m string) string {
	if m != "" {
		return m
	}
	return l.cfg.DefaultModel
}

// Message is one turn of a conversation, independent of the wire API.
type Message struct {
	Role       string // system | user | assistant | tool
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
}

// ToolCall is a function call the model asked for.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ToolSpec declares a function tool.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// Request is one model call.
type Request struct {
	Model     string
	Effort    string
	Messages  []Message
	Tools     []ToolSpec
	WebSearch bool
	// Schema asks for JSON output matching this JSON Schema.
	Schema map[string]any
	// IdleTimeout fails an attempt when the stream stays silent this long
	// (0: no limit); it counts as transient, so it is retried.
	IdleTimeout time.Duration
}

// Response is a model's answer: text, tool calls, or both.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	// Usage is what the server reported; zero when it reported nothing
	// (some OpenAI-compatible servers ignore stream_options).
	Usage Usage
}

// Usage counts the tokens of one call (or, added up, of several).
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens: u.TotalTokens + v.TotalTokens}
}

// IsZero reports whether no tokens were counted.
func (u Usage) IsZero() bool { return u == Usage{} }

// CallError is a failed call; Status is the HTTP status when there was one.
type CallError struct {
	Status    int
	Transient bool
	Err       error
}

func (e *CallError) Error() string { return e.Err.Error() }
func (e *CallError) Unwrap() error { return e.Err }

// Complete makes one model call, streaming text to onDelta, retrying
// transient failures with exponential backoff. onRetry is told of every
// failed attempt that will be retried.
func (l *Client) Complete(ctx context.Context, req Request, onDelta func(string), onRetry func(attempt int, err error, wait time.Duration)) (*Response, error) {
	req.Model = l.Model(req.Model)
	var last error
	for attempt := 1; attempt <= l.cfg.MaxAttempts; attempt++ {
		resp, err := l.once(ctx, req, onDelta)
		if err == nil {
			return resp, nil
		}
		last = err
		var le *CallError
		if ctx.Err() != nil || !errors.As(err, &le) || !le.Transient || attempt == l.cfg.MaxAttempts {
			break
		}
		wait := l.backoff(attempt, err)
		if onRetry != nil {
			onRetry(attempt, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, last
}

func (l *Client) backoff(attempt int, err error) time.Duration {
	d := l.cfg.RetryBase << (attempt - 1)
	var ae *openai.Error
	if errors.As(err, &ae) && ae.Response != nil {
		if s, perr := strconv.Atoi(ae.Response.Header.Get("Retry-After")); perr == nil && s >= 0 {
			ra := time.Duration(s) * time.Second
			if ra > d {
				d = ra
			}
		}
	}
	if d > 30*time.Second {
		d = 30 * time.Second
	}
	return d + time.Duration(rand.Int64N(int64(d)/4+1)) // jitter spreads retry storms
}

func (l *Client) once(ctx context.Context, req Request, onDelta func(string)) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	defer cancel()
	touch := func() {}
	if req.IdleTimeout > 0 {
		// A watchdog reset by every chunk: a stream that goes quiet for
		// longer than IdleTimeout is cut off.
		ictx, icancel := context.WithCancelCause(ctx)
		defer icancel(nil)
		ctx = ictx
		t := time.AfterFunc(req.IdleTimeout, func() { icancel(errIdle) })
		defer t.Stop()
		touch = func() { t.Reset(req.IdleTimeout) }
	}
	var (
		resp *Response
		err  error
	)
	if req.WebSearch || l.cfg.Responses {
		resp, err = l.viaResponses(ctx, req, onDelta, touch)
	} else {
		resp, err = l.viaChat(ctx, req, onDelta, touch)
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), errIdle) {
			return nil, &CallError{Transient: true, Err: fmt.Errorf("LLM stream idle for %s: %w", req.IdleTimeout, errIdle)}
		}
		return nil, classify(err)
	}
	return resp, nil
}

var errIdle = errors.New("idle timeout")

// classify marks which failures are worth retrying: rate limits, server
// errors, timeouts, broken connections and cut streams; never auth or
// request errors.
func classify(err error) error {
	var le *CallError
	if errors.As(err, &le) {
		return err
	}
	var ae *openai.Error
	if errors.As(err, &ae) {
		st := ae.StatusCode
		transient := st == http.StatusTooManyRequests || st == http.StatusRequestTimeout || st >= 500
		e := fmt.Errorf("LLM request failed: %w", err)
		if msg := strings.TrimSpace(ae.Message); msg != "" {
			// openai-go's Error() leaves out the provider's explanation.
			if len(msg) > 300 {
				msg = msg[:300] + "…"
			}
			e = fmt.Errorf("LLM request failed: %w: %s", err, msg)
		}
		return &CallError{Status: st, Transient: transient, Err: e}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var ne net.Error
	transient := errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) ||
		errors.Is(err, errTruncated) || strings.Contains(err.Error(), "EOF") ||
		strings.Contains(err.Error(), "connection reset")
	return &CallError{Transient: transient, Err: fmt.Errorf("LLM request failed: %w", err)}
}

var errTruncated = errors.New("response stream ended early")

func (l *Client) viaChat(ctx context.Context, req Request, onDelta func(string), touch func()) (*Response, error) {
	body, err := encodeChatRequest(req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	// openai-go sends the request (base URL, auth, headers, API errors);
	// its body and the stream are encoded and decoded here, into the few
	// fields we use: its own (reflection over every field of every message
	// and chunk) was about a fifth of the server's CPU per run.
	var raw *http.Response
	if err := l.client.Post(ctx, "chat/completions", nil, &raw, option.WithRequestBody("application/json", body)); err != nil {
		if raw != nil && raw.Body != nil {
			raw.Body.Close()
		}
		return nil, err
	}
	if raw == nil || raw.Body == nil {
		return nil, errTruncated
	}
	dec := newSSEDecoder(raw.Body)
	defer dec.Close()
	return decodeChatStream(dec, onDelta, touch)
}

// chatChunk is what a streamed chat completion chunk carries that we use
// (parseChatChunk reads it).
type chatChunk struct {
	Choices []chatChoice    `json:"choices"`
	Usage   *chatUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type chatChoice struct {
	Delta struct {
		Content   string              `json:"content"`
		ToolCalls []chatToolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

type chatToolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// decodeChatStream reads a chat completion's server-sent events: text
// deltas (passed to onDelta), tool calls assembled by index, the usage of
// the last chunk. A stream that ends without a finish reason is cut.
func decodeChatStream(dec ssestream.Decoder, onDelta func(string), touch func()) (*Response, error) {
	if dec == nil {
		return nil, errTruncated
	}
	var (
		text     strings.Builder
		calls    []ToolCall
		finished bool
		usage    Usage
		chunk    chatChunk
	)
	for dec.Next() {
		touch()
		ev := dec.Event()
		if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
			break
		}
		// A fresh chunk each time but for the choices' backing array (an
		// allocation a chunk): every choice read is copied out below.
		chunk = chatChunk{Choices: chunk.Choices[:0]}
		if err := parseChatChunk(ev.Data, &chunk); err != nil {
			return nil, fmt.Errorf("decode stream chunk: %w", err)
		}
		if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
			// A copy: the decoder's buffer goes back to its pool.
			ev.Data = bytes.Clone(ev.Data)
			return nil, &ssestream.StreamError{Message: "received error while streaming: " + string(chunk.Error), Event: ev}
		}
		if u := chunk.Usage; u != nil && (u.TotalTokens > 0 || u.PromptTokens > 0 || u.CompletionTokens > 0) {
			usage = Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
			if usage.TotalTokens == 0 {
				usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
			}
		}
		for _, ch := range chunk.Choices {
			if d := ch.Delta.Content; d != "" {
				text.WriteString(d)
				if onDelta != nil {
					onDelta(d)
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				idx := tc.Index
				if idx < 0 || idx > 1024 {
					return nil, fmt.Errorf("decode stream chunk: tool call index %d", idx)
				}
				for len(calls) <= idx {
					calls = append(calls, ToolCall{})
				}
				if tc.ID != "" {
					calls[idx].ID = tc.ID
				}
				if tc.Function.Name != "" {
					calls[idx].Name += tc.Function.Name
				}
				calls[idx].Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != "" {
				finished = true
			}
		}
	}
	if err := dec.Err(); err != nil {
		return nil, err
	}
	if !finished {
		return nil, errTruncated
	}
	return &Response{Text: text.String(), ToolCalls: calls, Usage: usage}, nil
}

func (l *Client) viaResponses(ctx context.Context, req Request, onDelta func(string), touch func()) (*Response, error) {
	params := responses.ResponseNewParams{Model: shared.ResponsesModel(req.Model), Store: openai.Bool(false)}
	var items []responses.ResponseInputItemUnionParam
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			params.Instructions = openai.String(m.Content)
		case "user":
			items = append(items, responses.ResponseInputItemParamOfMessage(m.Content, responses.EasyInputMessageRoleUser))
		case "assistant":
			if m.Content != "" {
				items = append(items, responses.ResponseInputItemParamOfMessage(m.Content, responses.EasyInputMessageRoleAssistant))
			}
			for _, tc := range m.ToolCalls {
				items = append(items, responses.ResponseInputItemParamOfFunctionCall(tc.Arguments, tc.ID, tc.Name))
			}
		case "tool":
			item := responses.ResponseInputItemParamOfFunctionCallOutput(m.Content)
			item.OfFunctionCallOutput.CallID = openai.String(m.ToolCallID)
			items = append(items, item)
		}
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: t.Parameters, Strict: openai.Bool(false),
		}})
	}
	if req.WebSearch {
		params.Tools = append(params.Tools, responses.ToolParamOfWebSearch(responses.WebSearchToolTypeWebSearch))
	}
	if req.Effort != "" {
		params.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(req.Effort)}
	}
	if req.Schema != nil {
		params.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "output", Schema: req.Schema},
		}}
	}
	stream := l.client.Responses.NewStreaming(ctx, params)
	defer stream.Close()
	var (
		text  strings.Builder
		final *responses.Response
	)
	for stream.Next() {
		touch()
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
			if onDelta != nil {
				onDelta(ev.Delta)
			}
		case "response.completed":
			r := ev.Response
			final = &r
		case "response.failed", "response.incomplete", "error":
			msg := ev.Message
			if msg == "" {
				msg = ev.Response.Error.Message
			}
			return nil, &CallError{Err: fmt.Errorf("LLM response %s: %s", strings.TrimPrefix(ev.Type, "response."), msg)}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if final == nil {
		return nil, errTruncated
	}
	out := &Response{Text: final.OutputText(), Usage: Usage{PromptTokens: final.Usage.InputTokens,
		CompletionTokens: final.Usage.OutputTokens, TotalTokens: final.Usage.TotalTokens}}
	if out.Text == "" {
		out.Text = text.String()
	}
	for _, item := range final.Output {
		if item.Type == "function_call" {
			fc := item.AsFunctionCall()
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: fc.CallID, Name: fc.Name, Arguments: fc.Arguments})
		}
	}
	return out, nil
}
