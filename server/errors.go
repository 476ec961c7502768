package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/graph"
	"github.com/switchyard/switchyard/store"
)

// Error codes of the API. They are a contract with the UI.
const (
	CodeBadRequest       = "bad_request"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	CodeInvalidGraph     = "invalid_graph"
	CodeInvalidDecision  = "invalid_decision"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodePayloadTooLarge  = "payload_too_large"
	CodeRequestTimeout   = "request_timeout"
	CodeNoLLM            = "no_llm"
	CodeUnavailable      = "unavailable"
	CodeDiskFull         = "disk_full"
	CodeRateLimited      = "rate_limited"
	CodeInternal         = "internal"
)

// apiError is an error the API reports as
// {"error": {"code", "message", "problems"?}} with Status.
type apiError struct {
	Status   int
	Code     string
	Message  string
	Problems []graph.Problem
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

func newErr(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return newErr(http.StatusBadRequest, CodeBadRequest, format, args...)
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code     string          `json:"code"`
	Message  string          `json:"message"`
	Problems []graph.Problem `json:"problems,omitempty"`
}

// compatErrorBody is an error on the compatibility routes in AgentFlow's
// shape: its client shows new Error(payload.error), so error is the
// message; code is Switchyard's error code.
type compatErrorBody struct {
	Error    string          `json:"error"`
	Code     string          `json:"code"`
	Problems []graph.Problem `json:"problems,omitempty"`
}

// isCompatPath reports whether an API path is one of the compatibility
// routes, which answer errors as compatErrorBody.
func isCompatPath(p string) bool {
	switch p {
	case "/api/run", "/api/run-stream", "/api/resume", "/api/resume-stream", "/api/default-workflow":
		return true
	}
	return strings.HasPrefix(p, "/api/run/")
}

// engineErr maps engine and store errors about an existing run or
// workflow to API errors.
func engineErr(err error) error {
	var inv *engine.InvalidError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &inv):
		return &apiError{Status: http.StatusBadRequest, Code: CodeInvalidGraph,
			Message: "the workflow has errors", Problems: inv.Problems}
	case errors.Is(err, engine.ErrInvalidDecision):
		return newErr(http.StatusBadRequest, CodeInvalidDecision, "%s", oneLine(err))
	case errors.Is(err, engine.ErrNotFound):
		return newErr(http.StatusNotFound, CodeNotFound, "%s", oneLine(err))
	case errors.Is(err, engine.ErrNotWaiting), errors.Is(err, engine.ErrConflict),
		errors.Is(err, engine.ErrNotPaused), errors.Is(err, engine.ErrTerminal):
		return newErr(http.StatusConflict, CodeConflict, "%s", oneLine(err))
	case errors.Is(err, engine.ErrInvalidWorkflow):
		return newErr(http.StatusBadRequest, CodeBadRequest, "%s", oneLine(err))
	case errors.Is(err, engine.ErrProviderUnsupported):
		return newErr(http.StatusBadRequest, CodeBadRequest, "%s", oneLine(err))
	case errors.Is(err, engine.ErrNoLLM), errors.Is(err, engine.ErrNoClaude):
		return newErr(http.StatusServiceUnavailable, CodeNoLLM, "%s", oneLine(err))
	case errors.Is(err, engine.ErrStorageFull):
		return newErr(http.StatusServiceUnavailable, CodeDiskFull,
			"disk full: the server cannot store anything more until space is freed; nothing of this request was saved")
	case errors.Is(err, store.ErrClosed):
		return newErr(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	}
	return err
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// errorHandler writes every error as the API's JSON error shape.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var ae *apiError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &he):
		ae = &apiError{Status: he.Code, Code: codeForStatus(he.Code), Message: http.StatusText(he.Code)}
		if m, ok := he.Message.(string); ok && m != "" {
			ae.Message = m
		}
	default:
		if mapped := engineErr(err); mapped != err && errors.As(mapped, &ae) {
			break
		}
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
		ae = newErr(http.StatusInternalServerError, CodeInternal, "internal error")
	}
	var body any = errorBody{Error: errorDetail{Code: ae.Code, Message: ae.Message, Problems: ae.Problems}}
	if isCompatPath(c.Request().URL.Path) {
		body = compatErrorBody{Error: ae.Message, Code: ae.Code, Problems: ae.Problems}
	}
	var werr error
	if c.Request().Method == http.MethodHead {
		werr = c.NoContent(ae.Status)
	} else {
		werr = c.JSON(ae.Status, body)
	}
	if werr != nil {
		s.log.Debug("write error response", "err", werr)
	}
}

func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodePayloadTooLarge
	case http.StatusRequestTimeout:
		return CodeRequestTimeout
	case http.StatusServiceUnavailable:
		return CodeUnavailable
	}
	if status >= 500 {
		return CodeInternal
	}
	return CodeBadRequest
}

// decodeBody reads the (size-limited) request body and decodes it as
// JSON into v. Errors are 400s that say where the JSON is wrong, or 413.
func decodeBody(c echo.Context, v any) error {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return bodyError(err)
	}
	return decodeJSON(raw, v)
}

// bodyError says why reading a request body failed: too large (413), too
// slow (408, the read deadline), or cut off (400).
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return newErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			"request body is larger than %d bytes", mbe.Limit)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return newErr(http.StatusRequestTimeout, CodeRequestTimeout,
			"the request body did not arrive within the read timeout")
	}
	return badRequest("reading the request body: %v", err)
}

// decodeJSON decodes raw into v, locating errors by line and column.
func decodeJSON(raw []byte, v any) error {
	if f, ok := v.(fastDecoder); ok && f.decodeFast(raw) {
		return nil // the usual body, read once (jsonfast.go)
	}
	// A valid body, the usual case, takes json.Unmarshal: no decoder and
	// no copy of raw into its buffer (1.7 % of the server's CPU in `load
	// runs`, with the same checks: one value, nothing but space after
	// it). A bad one is decoded again below, to say where it went wrong.
	if json.Unmarshal(raw, v) == nil {
		return nil
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return badRequest("request body is empty: expected a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return jsonError(raw, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(raw, dec.InputOffset())
		return badRequest("invalid JSON at line %d, column %d: unexpected data after the top-level value", line, col)
	}
	return nil
}

func jsonError(raw []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the offending byte: point at it.
		line, col := lineCol(raw, se.Offset-1)
		return badRequest("invalid JSON at line %d, column %d: %s", line, col, se.Error())
	case errors.As(err, &te):
		// Offset is just past the value: point at its last character.
		line, col := lineCol(raw, te.Offset-1)
		field := te.Field
		if field == "" {
			field = "(top level)"
		}
		return badRequest("invalid JSON at line %d, column %d: field %s must be %s, not %s",
			line, col, field, te.Type.String(), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		line, col := lineCol(raw, int64(len(raw)))
		return badRequest("invalid JSON at line %d, column %d: unexpected end of input", line, col)
	}
	return badRequest("invalid JSON: %v", err)
}

// lineCol turns a byte offset into a 1-based line and column (columns
// count characters).
func lineCol(raw []byte, off int64) (line, col int) {
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	if off < 0 {
		off = 0
	}
	before := raw[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	col = utf8.RuneCount(before[start:]) + 1
	return line, col
}

// decodeSlots bounds concurrent graph decodes; decodeWait is how long a
// request waits for a slot before a 503.
var (
	decodeSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))
	decodeWait  = 30 * time.Second
)

// acquireDecodeSlot waits (up to decodeWait) for one of the slots that
// bound concurrent decodes of graphs and YAML workflows: 503 when none
// frees in time. The caller calls release when done.
func acquireDecodeSlot(ctx context.Context) (release func(), err error) {
	t := time.NewTimer(decodeWait)
	defer t.Stop()
	select {
	case decodeSlots <- struct{}{}:
		return func() { <-decodeSlots }, nil
	case <-t.C:
		return nil, newErr(http.StatusServiceUnavailable, CodeUnavailable,
			"too many graphs and YAML workflows are being decoded at once (at most %d); try again", cap(decodeSlots))
	case <-ctx.Done():
		return nil, cancelled(ctx.Err())
	}
}

// decodeGraph decodes a graph in the current or legacy shape (graph.Decode
// normalizes it) and returns the normalization warnings.
func decodeGraph(raw json.RawMessage) (*graph.Graph, []graph.Problem, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil, badRequest("graph is required")
	}
	// Decoding a large graph costs many times its size in memory: a few at
	// a time, so concurrent uploads cannot add up.
	release, err := acquireDecodeSlot(context.Background())
	if err != nil {
		return nil, nil, err
	}
	defer release()
	g, warns, err := graph.Decode(raw)
	if err != nil {
		if errors.Is(err, graph.ErrTooLarge) {
			return nil, nil, newErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "graph: %v", err)
		}
		var de *graph.DecodeError
		if errors.As(err, &de) {
			return nil, nil, badRequest("graph: line %d, column %d of the graph value: %v", de.Line, de.Column, de.Err)
		}
		return nil, nil, badRequest("graph: %v", err)
	}
	return g, warns, nil
}

// validRunID reports whether id can be a run id (uuid-ish) before any
// lookup: hex digits and dashes, at most 64 characters.
func validRunID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) {
			return false
		}
	}
	return true
}

// validWorkflowID allows ids the store assigns (uuids) and the slugs a
// workflow source may use: letters, digits, '-', '_', '.', at most 128.
func validWorkflowID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, c := range id {
		if !(c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			return false
		}
	}
	return true
}

// validNodeID bounds node ids taken from URLs: any printable text up to
// 256 bytes.
func validNodeID(id string) bool {
	if id == "" || len(id) > 256 || !utf8.ValidString(id) {
		return false
	}
	for _, c := range id {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

func runIDParam(c echo.Context, name string) (string, error) {
	id := c.Param(name)
	if !validRunID(id) {
		return "", badRequest("invalid run id %q: expected hex digits and dashes (a uuid)", truncate(id, 80))
	}
	return id, nil
}

func workflowIDParam(c echo.Context) (string, error) {
	id := c.Param("id")
	if !validWorkflowID(id) {
		return "", badRequest("invalid workflow id %q: expected letters, digits, '-', '_' or '.'", truncate(id, 80))
	}
	return id, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
