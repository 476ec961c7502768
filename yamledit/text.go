package yamledit

import (
	"bytes"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// text is a workflow file's bytes with an index of its lines. yaml.v3
// gives node positions as 1-based line and column (counted in
// characters); text turns them into byte offsets and finds where a node's
// text ends, which yaml.v3 does not record.
type text struct {
	src   []byte
	start []int // byte offset of each line's first byte (line 1 at index 0)
	crlf  bool  // the file ends its lines with \r\n
}

func newText(src []byte) *text {
	t := &text{src: src, start: []int{0}}
	for i, c := range src {
		if c == '\n' {
			t.start = append(t.start, i+1)
		}
	}
	if i := bytes.IndexByte(src, '\n'); i > 0 && src[i-1] == '\r' {
		t.crlf = true
	}
	return t
}

// lines is the number of lines (a final line without \n counts).
func (t *text) lines() int {
	n := len(t.start)
	if t.start[n-1] == len(t.src) && n > 1 {
		return n - 1
	}
	return n
}

// lineStart is the offset of line l's first byte; len(src) past the end.
func (t *text) lineStart(l int) int {
	if l < 1 {
		return 0
	}
	if l > len(t.start) {
		return len(t.src)
	}
	return t.start[l-1]
}

// lineEnd is the offset just past line l's content (before \r\n or \n).
func (t *text) lineEnd(l int) int {
	if l >= len(t.start) {
		return len(t.src)
	}
	e := t.start[l] - 1 // the \n
	if e > t.start[l-1] && t.src[e-1] == '\r' {
		e--
	}
	return e
}

func (t *text) line(l int) []byte {
	if l < 1 || l > t.lines() {
		return nil
	}
	return t.src[t.lineStart(l):t.lineEnd(l)]
}

// lineOf is the line holding offset off.
func (t *text) lineOf(off int) int {
	lo, hi := 0, len(t.start)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if t.start[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1
}

// off is the byte offset of (line, column), both 1-based, the column
// counted in characters as yaml.v3 counts it.
func (t *text) off(line, col int) int {
	if line < 1 {
		return 0
	}
	if line > len(t.start) {
		return len(t.src)
	}
	o, end := t.lineStart(line), t.lineEnd(line)
	for c := 1; c < col && o < end; c++ {
		_, size := utf8.DecodeRune(t.src[o:end])
		o += size
	}
	return o
}

func (t *text) nodeOff(n *yaml.Node) int { return t.off(n.Line, n.Column) }

// indent counts the leading spaces of line l.
func (t *text) indent(l int) int {
	b := t.line(l)
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return i
}

func (t *text) blank(l int) bool { return len(bytes.TrimSpace(t.line(l))) == 0 }

func (t *text) comment(l int) bool {
	b := bytes.TrimLeft(t.line(l), " \t")
	return len(b) > 0 && b[0] == '#'
}

// contentEnd is the end of line l's content from offset from on, without
// a trailing comment (" #...") or trailing blanks.
func (t *text) contentEnd(l, from int) int {
	end := t.lineEnd(l)
	b := t.src[:end]
	for i := from; i < end; i++ {
		if b[i] == '#' && (i == from || b[i-1] == ' ' || b[i-1] == '\t') {
			end = i
			break
		}
	}
	for end > from && (b[end-1] == ' ' || b[end-1] == '\t') {
		end--
	}
	return end
}

// scanQuoted returns the offset past the quoted scalar starting at o.
func (t *text) scanQuoted(o int) int {
	q := t.src[o]
	for i := o + 1; i < len(t.src); i++ {
		c := t.src[i]
		switch {
		case q == '"' && c == '\\':
			i++
		case c == q && q == '\'' && i+1 < len(t.src) && t.src[i+1] == '\'':
			i++
		case c == q:
			return i + 1
		}
	}
	return len(t.src)
}

// scanFlow returns the offset past the flow collection starting at o.
func (t *text) scanFlow(o int) int {
	depth := 0
	for i := o; i < len(t.src); i++ {
		switch c := t.src[i]; c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '"', '\'':
			if c == '\'' && i > o && isPlainChar(t.src[i-1]) {
				continue // an apostrophe inside a plain scalar
			}
			i = t.scanQuoted(i) - 1
		case '#':
			if i > o && (t.src[i-1] == ' ' || t.src[i-1] == '\t' || t.src[i-1] == '\n') {
				for i < len(t.src) && t.src[i] != '\n' {
					i++
				}
			}
		}
	}
	return len(t.src)
}

func isPlainChar(c byte) bool {
	return c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != ',' && c != '[' && c != '{' && c != ':'
}

// nodeEnd is the offset just past n's text (its trailing comment and the
// blank lines after it excluded). parent is the indentation (in spaces)
// of the block n is a value or item of: lines indented no more than that
// end n.
func (t *text) nodeEnd(n *yaml.Node, parent int) int {
	o := t.nodeOff(n)
	if o >= len(t.src) {
		return len(t.src)
	}
	if n.Kind == yaml.AliasNode {
		return t.tokenEnd(o)
	}
	// Skip an anchor or a tag: the node's position is theirs.
	for o < len(t.src) && (t.src[o] == '&' || t.src[o] == '!') {
		o = t.tokenEnd(o)
		for o < len(t.src) && (t.src[o] == ' ' || t.src[o] == '\t') {
			o++
		}
		if o < len(t.src) && (t.src[o] == '\n' || t.src[o] == '\r') {
			return t.blockEnd(n, parent, t.lineOf(o))
		}
	}
	if o >= len(t.src) {
		return len(t.src)
	}
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		if c := t.src[o]; c == '[' || c == '{' {
			return t.scanFlow(o)
		}
		return t.blockEnd(n, parent, n.Line)
	case yaml.ScalarNode:
		switch c := t.src[o]; c {
		case '"', '\'':
			return t.scanQuoted(o)
		case '|', '>':
			return t.blockScalarEnd(n.Line, o, parent)
		}
		return t.plainEnd(t.lineOf(o), o, parent)
	}
	return t.tokenEnd(o)
}

// blockEnd is the end of a block collection: the end of its last child.
func (t *text) blockEnd(n *yaml.Node, parent, fallbackLine int) int {
	if len(n.Content) == 0 {
		return t.contentEnd(fallbackLine, t.lineStart(fallbackLine))
	}
	last := n.Content[len(n.Content)-1]
	return t.nodeEnd(last, n.Column-1)
}

func (t *text) tokenEnd(o int) int {
	for o < len(t.src) {
		switch t.src[o] {
		case ' ', '\t', '\n', '\r', ',', ']', '}':
			return o
		}
		o++
	}
	return o
}

// blockScalarEnd is the end of a | or > scalar whose header is at o on
// line l: its last non-blank line indented more than parent.
func (t *text) blockScalarEnd(l, o, parent int) int {
	end := t.contentEnd(l, o)
	for k := l + 1; k <= t.lines(); k++ {
		if t.blank(k) {
			continue
		}
		if t.indent(k) <= parent {
			break
		}
		end = t.lineEnd(k)
	}
	return end
}

// plainEnd is the end of a plain scalar starting at o on line l, with its
// continuation lines (indented more than parent, up to a comment).
func (t *text) plainEnd(l, o, parent int) int {
	end := t.contentEnd(l, o)
	if end < t.lineEnd(l) {
		return end // a comment ends it
	}
	for k := l + 1; k <= t.lines(); k++ {
		if t.blank(k) {
			continue
		}
		if t.comment(k) || t.indent(k) <= parent {
			break
		}
		b := t.line(k)
		if bytes.HasPrefix(bytes.TrimLeft(b, " "), []byte("- ")) || bytes.Contains(b, []byte(": ")) || bytes.HasSuffix(b, []byte(":")) {
			break // a key or an item, not a continuation
		}
		end = t.contentEnd(k, t.lineStart(k))
		if end < t.lineEnd(k) {
			break
		}
	}
	return end
}
