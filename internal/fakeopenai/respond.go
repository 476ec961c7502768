package fakeopenai

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// plan is a Reply normalised for encoding: IDs assigned, defaults filled.
type plan struct {
	id      string // numeric suffix shared by all generated IDs of one reply
	model   string
	created int64
	text    string
	chunks  []string
	calls   []ToolCall
	web     []string
	finish  string
	usage   Usage
}

func (s *Server) newPlan(req *Request, rep Reply) *plan {
	p := &plan{
		id:      "fake" + strconv.FormatInt(s.ids.Add(1), 10),
		model:   req.Model,
		created: time.Now().Unix(),
		text:    rep.Text,
		chunks:  rep.Chunks,
		web:     rep.WebSearch,
		finish:  rep.FinishReason,
	}
	if len(p.chunks) > 0 {
		n := 0
		for _, c := range p.chunks {
			n += len(c)
		}
		buf := make([]byte, 0, n)
		for _, c := range p.chunks {
			buf = append(buf, c...)
		}
		p.text = string(buf)
	}
	if len(rep.ToolCalls) > 0 {
		p.calls = make([]ToolCall, len(rep.ToolCalls))
		for i, tc := range rep.ToolCalls {
			if tc.ID == "" {
				tc.ID = "call_" + p.id + "_" + strconv.Itoa(i)
			}
			if tc.Arguments == "" {
				tc.Arguments = "{}"
			}
			p.calls[i] = tc
		}
	}
	if p.finish == "" {
		p.finish = "stop"
		if len(p.calls) > 0 {
			p.finish = "tool_calls"
		}
	}
	if rep.Usage != nil {
		p.usage = *rep.Usage
	} else {
		for _, m := range req.Messages {
			p.usage.PromptTokens += 4 + estimateTokens(m.Content)
		}
		p.usage.PromptTokens += estimateTokens(req.Instructions)
		p.usage.CompletionTokens = estimateTokens(p.text)
		for _, c := range p.calls {
			p.usage.CompletionTokens += estimateTokens(c.Name) + estimateTokens(c.Arguments)
		}
	}
	return p
}

func (p *plan) textChunks() []string {
	if len(p.chunks) > 0 {
		return p.chunks
	}
	return splitWords(p.text)
}

// argPieceBytes is how many bytes of tool-call arguments go in one delta.
const argPieceBytes = 16

// payload is a fully encoded reply: a JSON body, or SSE events with their
// end offsets so that streams can be paced or truncated at event boundaries.
type payload struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	ends []int
	// final is the index of the first event a truncated stream must not send
	// (the finish_reason chunk or the response.completed event).
	final int
}

var payloadPool = sync.Pool{New: func() any {
	p := &payload{}
	p.enc = json.NewEncoder(&p.buf)
	p.enc.SetEscapeHTML(false)
	return p
}}

func getPayload() *payload {
	p := payloadPool.Get().(*payload)
	p.buf.Reset()
	p.ends = p.ends[:0]
	p.final = 0
	return p
}

func putPayload(p *payload) {
	if p.buf.Cap() > 1<<20 {
		return // don't pin huge buffers in the pool
	}
	payloadPool.Put(p)
}

// event appends one SSE event; name is omitted for chat chunks.
func (p *payload) event(name string, v any) {
	if name != "" {
		p.buf.WriteString("event: ")
		p.buf.WriteString(name)
		p.buf.WriteByte('\n')
	}
	p.buf.WriteString("data: ")
	// Encoding our own plain structs cannot fail.
	_ = p.enc.Encode(v) // Encode adds the line's '\n'
	p.buf.WriteByte('\n')
	p.ends = append(p.ends, p.buf.Len())
}

func (p *payload) rawEvent(s string) {
	p.buf.WriteString(s)
	p.ends = append(p.ends, p.buf.Len())
}

func (p *payload) markFinal() { p.final = len(p.ends) }

// respond waits the latency, then writes the reply or injects its fault.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, req *Request, rep Reply) {
	ctx := r.Context()
	w.Header().Set("X-Request-Id", requestID(req.Seq))
	latency := rep.Latency
	if latency == 0 {
		latency = s.cfg.latency
	}
	if latency > 0 && !s.sleep(ctx, latency) {
		if s.isClosing() {
			abortConnection(w)
		}
		return
	}
	switch {
	case rep.Hang:
		s.cfg.logger.Debug("fakeopenai: hanging", "seq", req.Seq)
		select {
		case <-ctx.Done():
		case <-s.closing:
			abortConnection(w)
		}
		return
	case rep.Reset && !rep.TruncateStream:
		s.cfg.logger.Debug("fakeopenai: resetting connection", "seq", req.Seq)
		abortConnection(w)
		return
	case rep.Status >= 400:
		if rep.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(rep.RetryAfter.Seconds())), 10))
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(rep.RetryAfter.Milliseconds(), 10))
		} else if rep.Status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		writeAPIError(w, rep.Status, "", rep.ErrorMessage)
		return
	}

	p := getPayload()
	defer putPayload(p)
	pl := s.newPlan(req, rep)
	switch {
	case req.API == APIChat && req.Stream:
		encodeChatStream(p, pl, req.IncludeUsage)
	case req.API == APIChat:
		encodeChat(p, pl)
	case req.Stream:
		encodeResponsesStream(p, pl, req)
	default:
		encodeResponse(p, pl, req)
	}

	if !req.Stream {
		body := p.buf.Bytes()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case rep.Malformed:
			body = body[:len(body)/2]
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		case rep.TruncateStream:
			// No Content-Length: the half body then ends in a clean EOF.
			body = body[:len(body)/2]
		default:
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		if rep.TruncateStream && rep.Reset {
			_ = http.NewResponseController(w).Flush()
			abortConnection(w)
		}
		return
	}

	limit := len(p.ends)
	switch {
	case rep.Malformed:
		// One good event, then one whose data is not JSON; no terminator.
		p.buf.Truncate(p.ends[0])
		p.ends = p.ends[:1]
		if req.API == APIChat {
			p.rawEvent("data: {\"id\":\"chatcmpl-" + pl.id + "\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":\n\n")
		} else {
			p.rawEvent("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\n\n")
		}
		limit = 2
	case rep.TruncateStream:
		limit = rep.TruncateAfter
		if limit <= 0 {
			limit = max(1, p.final/2)
		}
		limit = min(limit, p.final)
	}
	delay := rep.ChunkDelay
	if delay == 0 {
		delay = s.cfg.chunkDelay
	}
	// A reply cut short (truncated, reset, malformed) keeps the chunked
	// encoding, so an abort lands mid-body as it would from a real server.
	whole := !rep.TruncateStream && !rep.Malformed
	if !s.writeEvents(w, r, p, limit, delay, whole) {
		return
	}
	if rep.TruncateStream && rep.Reset {
		s.cfg.logger.Debug("fakeopenai: aborting stream", "seq", req.Seq, "events", limit)
		abortConnection(w)
	}
}

// writeEvents sends the first limit events, pausing delay between them;
// whole says they are the complete reply. It reports false when the client
// left or the server closed mid-stream.
func (s *Server) writeEvents(w http.ResponseWriter, r *http.Request, p *payload, limit int, delay time.Duration, whole bool) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	data := p.buf.Bytes()
	if whole && limit > 0 && delay <= 0 {
		// No pacing: the whole stream in one response with its length, so
		// headers and body leave in one write (no chunked encoding, no
		// separate terminator), far cheaper for both ends under load.
		body := data[:p.ends[limit-1]]
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, err := w.Write(body)
		return err == nil
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if limit <= 0 {
		_ = rc.Flush()
		return true
	}
	prev := 0
	for i := 0; i < limit; i++ {
		if i > 0 {
			if !s.sleep(r.Context(), delay) {
				if s.isClosing() {
					abortConnection(w)
				}
				return false
			}
		}
		if _, err := w.Write(data[prev:p.ends[i]]); err != nil {
			return false
		}
		prev = p.ends[i]
		if err := rc.Flush(); err != nil {
			return false
		}
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

type apiErrorJSON struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// writeAPIError writes the OpenAI error envelope with a type and code that
// fit the status; an empty msg gets a default text.
func writeAPIError(w http.ResponseWriter, status int, code, msg string) {
	typ, defCode, defMsg := "invalid_request_error", "", http.StatusText(status)
	switch {
	case status == http.StatusUnauthorized:
		defCode, defMsg = "invalid_api_key", "Incorrect API key provided."
	case status == http.StatusNotFound:
		defCode = "unknown_url"
	case status == http.StatusTooManyRequests:
		typ, defCode, defMsg = "requests", "rate_limit_exceeded", "Rate limit reached for requests (fakeopenai)."
	case status >= 500:
		typ, defMsg = "server_error", "The server had an error while processing your request (fakeopenai)."
	}
	if code == "" {
		code = defCode
	}
	if msg == "" {
		msg = defMsg
	}
	writeAPIErrorCode(w, status, typ, code, msg)
}

func writeAPIErrorCode(w http.ResponseWriter, status int, typ, code, msg string) {
	e := apiErrorJSON{Error: apiErrorBody{Message: msg, Type: typ}}
	if code != "" {
		e.Error.Code = &code
	}
	writeJSON(w, status, e)
}
