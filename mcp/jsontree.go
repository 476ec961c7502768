package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
)

// jnode is one JSON value with the byte offset where it starts, so that
// config errors can name the line of the field they are about
// (encoding/json's Unmarshal forgets positions).
type jnode struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	off   int
	str   string
	num   json.Number
	b     bool
	keys  []jmember // objects, in file order
	elems []*jnode  // arrays
}

type jmember struct {
	name string
	off  int // offset of the key
	val  *jnode
}

// kindName is how errors name a JSON kind.
func (n *jnode) kindName() string {
	switch n.kind {
	case 'o':
		return "an object"
	case 'a':
		return "an array"
	case 's':
		return "a string"
	case 'n':
		return "a number"
	case 'b':
		return "a boolean"
	}
	return "null"
}

// maxDepth bounds the nesting of a config file: far above anything an MCP
// config holds, low enough that a hostile file cannot exhaust the stack.
const maxDepth = 64

// jsonParser parses a whole document into jnodes.
type jsonParser struct {
	data []byte
	dec  *json.Decoder
}

// parseJSON parses data (one JSON value, nothing after it). A syntax error
// comes back as a *syntaxError with the offset it was found at.
func parseJSON(data []byte) (*jnode, error) {
	p := &jsonParser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.next()
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, &syntaxError{off: off, msg: "unexpected data after the top-level value"}
	}
	return n, nil
}

// syntaxError is malformed JSON at a byte offset.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// next is the offset of the next token: InputOffset is the end of the
// previous one, which may be followed by blanks, ':' or ','.
func (p *jsonParser) next() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\n', '\r', ':', ',':
			off++
			continue
		}
		break
	}
	return off
}

func (p *jsonParser) token() (json.Token, int, error) {
	off := p.next()
	t, err := p.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, int(se.Offset), &syntaxError{off: int(se.Offset), msg: se.Error()}
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, len(p.data), &syntaxError{off: len(p.data), msg: "unexpected end of JSON input"}
		}
		return nil, off, &syntaxError{off: off, msg: err.Error()}
	}
	return t, off, nil
}

func (p *jsonParser) value(depth int) (*jnode, error) {
	t, off, err := p.token()
	if err != nil {
		return nil, err
	}
	return p.valueFrom(t, off, depth)
}

func (p *jsonParser) valueFrom(t json.Token, off, depth int) (*jnode, error) {
	if depth > maxDepth {
		return nil, &syntaxError{off: off, msg: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	n := &jnode{off: off}
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			n.kind = 'o'
			for p.dec.More() {
				kt, koff, err := p.token()
				if err != nil {
					return nil, err
				}
				name, ok := kt.(string)
				if !ok { // the decoder reports this itself; kept for safety
					return nil, &syntaxError{off: koff, msg: "object key is not a string"}
				}
				val, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, jmember{name: name, off: koff, val: val})
			}
		case '[':
			n.kind = 'a'
			for p.dec.More() {
				val, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, val)
			}
		}
		if _, _, err := p.token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind, n.str = 's', v
	case json.Number:
		n.kind, n.num = 'n', v
	case bool:
		n.kind, n.b = 'b', v
	case nil:
		n.kind = 'z'
	}
	return n, nil
}

// lineIndex maps byte offsets to 1-based line numbers.
type lineIndex []int // offsets of the '\n' bytes

func newLineIndex(data []byte) lineIndex {
	var idx lineIndex
	for i, c := range data {
		if c == '\n' {
			idx = append(idx, i)
		}
	}
	return idx
}

func (idx lineIndex) line(off int) int {
	return sort.SearchInts(idx, off) + 1
}
