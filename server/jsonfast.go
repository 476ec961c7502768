package server

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/labstack/echo/v4"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/internal/jsonw"
)

// jsonAppender is a response body that writes its JSON by hand, byte for
// byte what encoding/json writes for it. An error means "let encoding/json
// do it" (which then reports any real error as before).
type jsonAppender interface {
	appendJSON(dst []byte) ([]byte, error)
}

// jsonSerializer is echo's serializer, but for the bodies that write
// themselves: a run's detail answers every POST /api/runs, and
// encoding/json's reflection over it was about 2 % of the server's CPU a
// run (`load runs` profile). Indented output (?pretty) stays with
// encoding/json.
type jsonSerializer struct{ echo.DefaultJSONSerializer }

func (s jsonSerializer) Serialize(c echo.Context, i any, indent string) error {
	if a, ok := i.(jsonAppender); ok && indent == "" {
		if b, err := a.appendJSON(make([]byte, 0, 2048)); err == nil {
			// json.Encoder ends what it writes with a newline.
			_, err = c.Response().Write(append(b, '\n'))
			return err
		}
	}
	return s.DefaultJSONSerializer.Serialize(c, i, indent)
}

func (d *runDetail) appendJSON(b []byte) ([]byte, error) {
	b, err := d.runSummary.appendFields(append(b, '{'))
	if err != nil {
		return nil, err
	}
	b = append(b, `,"outputs":`...)
	b = appendStringMap(b, d.Outputs)
	if len(d.Graph) > 0 {
		if b, err = compactGraphs.append(append(b, `,"graph":`...), d.Graph); err != nil {
			return nil, err
		}
	}
	if d.Source != "" {
		b = jsonw.AppendString(append(b, `,"source":`...), d.Source)
	}
	b = append(b, `,"nodes":`...)
	if d.Nodes == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range d.Nodes {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = d.Nodes[i].appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if d.WorkDir != "" {
		b = jsonw.AppendString(append(b, `,"workDir":`...), d.WorkDir)
	}
	if d.Branch != "" {
		b = jsonw.AppendString(append(b, `,"branch":`...), d.Branch)
	}
	return append(b, '}'), nil
}

// compactGraphs are the definitions found already compact, as the runs
// of a prepared graph share one (engine.Run.Definition is an immutable
// snapshot, shared, never written to): encoding/json checks and compacts
// a RawMessage on every encoding (escaping <, > and &), and a graph of
// three nodes took most of the detail's time that way.
var compactGraphs = rawCache{m: map[*byte]json.RawMessage{}}

// rawCache remembers JSON values that encode as themselves, by where
// their bytes are: each entry keeps its bytes alive, so the address
// cannot be reused for others while it is there.
type rawCache struct {
	mu    sync.Mutex
	m     map[*byte]json.RawMessage
	bytes int // of the values in m
}

// rawCacheMax and rawCacheBytes bound the entries (a few per graph the
// server runs) and the memory they keep alive: a run read back from the
// store brings a fresh copy of its definition each time, which is cached
// but never hit again. When either is reached the cache starts over.
const (
	rawCacheMax   = 256
	rawCacheBytes = 4 << 20
)

// append writes raw as encoding/json writes a RawMessage.
func (c *rawCache) append(b []byte, raw json.RawMessage) ([]byte, error) {
	p := unsafe.SliceData(raw)
	c.mu.Lock()
	known, ok := c.m[p]
	c.mu.Unlock()
	if ok && len(known) == len(raw) {
		return append(b, raw...), nil
	}
	// Marshal of a RawMessage alone is exactly what encoding/json writes
	// for it inside a value.
	out, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(out, raw) && len(raw) <= rawCacheBytes/4 {
		c.mu.Lock()
		if len(c.m) >= rawCacheMax || c.bytes+len(raw) > rawCacheBytes {
			clear(c.m)
			c.bytes = 0
		}
		c.bytes += len(raw) - len(c.m[p])
		c.m[p] = raw
		c.mu.Unlock()
	}
	return append(b, out...), nil
}

// appendFields writes a run summary's fields, without braces.
func (s *runSummary) appendFields(b []byte) ([]byte, error) {
	var err error
	b = jsonw.AppendString(append(b, `"runId":`...), s.RunID)
	if s.WorkflowID != "" {
		b = jsonw.AppendString(append(b, `,"workflowId":`...), s.WorkflowID)
	}
	b = jsonw.AppendString(append(b, `,"kind":`...), s.Kind)
	b = jsonw.AppendString(append(b, `,"status":`...), string(s.Status))
	b = jsonw.AppendString(append(b, `,"input":`...), s.Input)
	b = strconv.AppendBool(append(b, `,"waitingForInput":`...), s.WaitingForInput)
	if s.CurrentNodeID != "" {
		b = jsonw.AppendString(append(b, `,"currentNodeId":`...), s.CurrentNodeID)
	}
	b = append(b, `,"pendingApprovals":`...)
	switch {
	case s.PendingApprovals == nil:
		b = append(b, "null"...)
	case len(s.PendingApprovals) == 0:
		b = append(b, "[]"...)
	default:
		pa, err := json.Marshal(s.PendingApprovals) // rare: left to encoding/json
		if err != nil {
			return nil, err
		}
		b = append(b, pa...)
	}
	if s.Error != "" {
		b = jsonw.AppendString(append(b, `,"error":`...), s.Error)
	}
	if b, err = appendTime(append(b, `,"createdAt":`...), s.CreatedAt); err != nil {
		return nil, err
	}
	if b, err = appendTime(append(b, `,"updatedAt":`...), s.UpdatedAt); err != nil {
		return nil, err
	}
	if s.FinishedAt != nil {
		if b, err = appendTime(append(b, `,"finishedAt":`...), *s.FinishedAt); err != nil {
			return nil, err
		}
	}
	if b, err = appendUsage(append(b, `,"usage":`...), s.Usage); err != nil {
		return nil, err
	}
	if s.ForkOf != nil {
		b = jsonw.AppendString(append(b, `,"forkOf":{"runId":`...), s.ForkOf.RunID)
		b = jsonw.AppendString(append(b, `,"nodeId":`...), s.ForkOf.NodeID)
		b = append(b, '}')
	}
	return b, nil
}

func (n *nodeJSON) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = jsonw.AppendString(append(b, `{"nodeId":`...), n.NodeID)
	b = jsonw.AppendString(append(b, `,"status":`...), n.Status)
	for _, f := range [...]struct{ key, v string }{{`,"input":`, n.Input}, {`,"output":`, n.Output},
		{`,"handle":`, n.Handle}, {`,"error":`, n.Error}} {
		if f.v != "" {
			b = jsonw.AppendString(append(b, f.key...), f.v)
		}
	}
	b = strconv.AppendInt(append(b, `,"visits":`...), int64(n.Visits), 10)
	b = strconv.AppendInt(append(b, `,"attempts":`...), int64(n.Attempts), 10)
	if n.StartedAt != nil {
		if b, err = appendTime(append(b, `,"startedAt":`...), *n.StartedAt); err != nil {
			return nil, err
		}
	}
	if n.FinishedAt != nil {
		if b, err = appendTime(append(b, `,"finishedAt":`...), *n.FinishedAt); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendTime writes t as time.Time's MarshalJSON does, with its errors
// (a year outside 0-9999, an offset of 24 hours or more).
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b, err := t.AppendText(append(b, '"'))
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}

func appendUsage(b []byte, u engine.Usage) ([]byte, error) {
	b = strconv.AppendInt(append(b, `{"promptTokens":`...), u.PromptTokens, 10)
	b = strconv.AppendInt(append(b, `,"completionTokens":`...), u.CompletionTokens, 10)
	b = strconv.AppendInt(append(b, `,"totalTokens":`...), u.TotalTokens, 10)
	if u.CostUSD != nil {
		var err error
		if b, err = appendFloat(append(b, `,"costUsd":`...), *u.CostUSD); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendFloat writes f as encoding/json writes a float64: the shortest
// form, exponent notation below 1e-6 and from 1e21, "e-07" as "e-7".
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendStringMap writes m with its keys sorted, as encoding/json does.
func appendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonw.AppendString(b, k), ':')
		b = jsonw.AppendString(b, m[k])
	}
	return append(b, '}')
}

// fastDecoder is a request body that can decode its usual form by hand,
// to what json.Unmarshal would make of it; false leaves raw to
// encoding/json (decodeJSON), which also words every error.
type fastDecoder interface {
	decodeFast(raw []byte) bool
}

func (req *createRunRequest) decodeFast(raw []byte) bool { return decodeCreateRun(raw, req) }

// decodeCreateRun is json.Unmarshal(raw, req) for the usual body of POST
// /api/runs: an object of the exact keys graph, input and workflowId,
// strings without escapes. It reads the body once (SkipValue) where
// json.Unmarshal validates it and then decodes it, copying the graph; the
// graph is the same bytes either way. ok false: the body is anything else
// (other keys or letter cases, escapes, invalid UTF-8, other types, bad
// JSON), for encoding/json to decode or to explain.
func decodeCreateRun(raw []byte, req *createRunRequest) (ok bool) {
	var out createRunRequest
	if !jsonw.Members(raw, func(key []byte, i int) (int, bool) {
		switch string(key) {
		case "graph":
			end, ok := jsonw.SkipValue(raw, i)
			if ok {
				out.Graph = json.RawMessage(raw[i:end])
			}
			return end, ok
		case "input":
			if s, next, ok := jsonw.PlainString(raw, i); ok {
				str := string(s)
				out.Input = &str
				return next, true
			}
			next, ok := isNull(raw, i)
			if ok {
				out.Input = nil
			}
			return next, ok
		case "workflowId":
			if s, next, ok := jsonw.PlainString(raw, i); ok {
				out.WorkflowID = string(s)
				return next, true
			}
			return isNull(raw, i) // null leaves a string as it is
		}
		return i, false
	}) {
		return false
	}
	*req = out
	return true
}

func isNull(raw []byte, i int) (next int, ok bool) {
	if len(raw)-i >= 4 && string(raw[i:i+4]) == "null" {
		return i + 4, true
	}
	return i, false
}
