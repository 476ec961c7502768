package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// ErrNotObject is the cause of a DecodeError when the document is valid JSON
// but not an object.
var ErrNotObject = errors.New("a graph must be a JSON object with \"nodes\" and \"edges\"")

// DecodeError is malformed graph JSON, located by 1-based line and column
// (columns count characters, not bytes).
type DecodeError struct {
	Line   int
	Column int
	Err    error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, describeJSONError(e.Err))
}

func (e *DecodeError) Unwrap() error { return e.Err }

// rawGraph accepts both the current and the legacy shape in one pass.
type rawGraph struct {
	// Pointers: growing a slice of large structs while decoding a big
	// array copies them over and over.
	Nodes       []*rawNode `json:"nodes"`
	Edges       []Edge     `json:"edges"`
	Connections []Edge     `json:"connections"`
}

type rawNode struct {
	ID       string    `json:"id"`
	Type     string    `json:"type"`
	Position *Position `json:"position"`
	X        *float64  `json:"x"`
	Y        *float64  `json:"y"`
	Data     NodeData  `json:"data"`
}

// shadowGraph mirrors rawGraph without any custom unmarshaler. NodeData's
// UnmarshalJSON decodes its own sub-slice, so a type error inside "data"
// carries an offset relative to that slice; decoding the shadow recovers
// the offset in the whole document. Only used on the error path.
type shadowGraph struct {
	Nodes []struct {
		ID       string        `json:"id"`
		Type     string        `json:"type"`
		Position *Position     `json:"position"`
		X        *float64      `json:"x"`
		Y        *float64      `json:"y"`
		Data     nodeDataAlias `json:"data"`
	} `json:"nodes"`
	Edges       []Edge `json:"edges"`
	Connections []Edge `json:"connections"`
}

// Decode parses a graph in the current shape or the legacy one (top-level
// x/y on nodes, "connections" instead of or beside "edges"), normalizes it
// and returns it with the normalization warnings. Malformed input returns a
// *DecodeError.
func Decode(data []byte) (*Graph, []Problem, error) {
	var raw rawGraph
	err := json.Unmarshal(data, &raw)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return nil, nil, newDecodeError(data, err)
	}
	// Valid JSON from here on, so its first byte tells its kind.
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		line, col := lineColumn(data, int64(len(data)-len(trimmed)+1))
		return nil, nil, &DecodeError{Line: line, Column: col, Err: ErrNotObject}
	}
	if err != nil {
		var te, ste *json.UnmarshalTypeError
		if errors.As(err, &te) {
			var shadow shadowGraph
			// Same field, so the same culprit, now with a whole-document offset.
			if serr := json.Unmarshal(data, &shadow); errors.As(serr, &ste) && ste.Field == te.Field {
				err = serr
			}
		}
		return nil, nil, newDecodeError(data, err)
	}

	g := &Graph{
		Nodes: make([]Node, len(raw.Nodes)),
		Edges: make([]Edge, 0, len(raw.Edges)+len(raw.Connections)),
	}
	for i, rn := range raw.Nodes {
		if rn == nil { // a null in the array
			rn = &rawNode{}
		}
		n := Node{ID: rn.ID, Type: rn.Type, Data: rn.Data}
		if rn.Position != nil {
			n.Position = *rn.Position
		} else { // legacy: x and y at the top of the node
			if rn.X != nil {
				n.Position.X = *rn.X
			}
			if rn.Y != nil {
				n.Position.Y = *rn.Y
			}
		}
		g.Nodes[i] = n
	}
	g.Edges = append(g.Edges, raw.Edges...)
	g.Edges = append(g.Edges, raw.Connections...)
	if err := CheckLimits(g); err != nil {
		return nil, nil, err
	}
	return g, Normalize(g), nil
}

// Encode writes g as indented JSON with a trailing newline. Field order is
// fixed by the types and Extra keys are sorted, so equal graphs encode to
// equal bytes.
func Encode(g *Graph) ([]byte, error) {
	out := struct {
		Nodes []Node `json:"nodes"`
		Edges []Edge `json:"edges"`
	}{g.Nodes, g.Edges}
	// Empty lists, not null: the editor maps over them.
	if out.Nodes == nil {
		out.Nodes = []Node{}
	}
	if out.Edges == nil {
		out.Edges = []Edge{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Prompts are full of < and >; escaping them would make files unreadable.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("encode graph: %w", err)
	}
	return buf.Bytes(), nil
}

func newDecodeError(data []byte, err error) *DecodeError {
	var off int64
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = valueStart(data, te.Offset) + 1
	}
	line, col := lineColumn(data, off)
	return &DecodeError{Line: line, Column: col, Err: err}
}

// valueStart returns the index of the first byte of the value that a type
// error's offset ends. encoding/json reports the end of a scalar but the
// opening bracket of an object or array; pointing at the start reads better.
func valueStart(data []byte, end int64) int64 {
	last := end - 1
	if last < 0 || last >= int64(len(data)) {
		return max(last, 0)
	}
	switch data[last] {
	case '{', '[':
		return last
	case '"':
		for i := last - 1; i >= 0; i-- {
			if data[i] != '"' {
				continue
			}
			backslashes := int64(0)
			for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
				backslashes++
			}
			if backslashes%2 == 0 {
				return i
			}
		}
		return last
	}
	i := last
	for i > 0 && isLiteralByte(data[i-1]) {
		i--
	}
	return i
}

func isLiteralByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.'
}

// lineColumn turns an encoding/json offset (the number of bytes read when
// the error was found, so the culprit is the byte before it) into a 1-based
// line and character column.
func lineColumn(data []byte, off int64) (line, col int) {
	pos := int(off) - 1
	if pos > len(data) {
		pos = len(data)
	}
	if pos < 0 {
		pos = 0
	}
	before := data[:pos]
	line = 1 + bytes.Count(before, []byte{'\n'})
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	col = 1 + utf8.RuneCount(before[lineStart:])
	return line, col
}

// describeJSONError phrases encoding/json errors in terms of the document
// rather than of Go types.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "top level"
		}
		if n, ok := strings.CutPrefix(te.Value, "number "); ok {
			return fmt.Sprintf("%s: number %s does not fit %s", field, n, te.Type)
		}
		return fmt.Sprintf("%s: got %s, want %s", field, te.Value, jsonKind(te.Type))
	}
	return err.Error()
}

func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return t.String()
}
