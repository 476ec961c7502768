package yamlflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The `when:` condition language.
//
//	expr    := and ( "||" and )*
//	and     := cmp ( "&&" cmp )*
//	cmp     := operand op operand
//	op      := "==" | "!=" | "<" | ">" | "<=" | ">="
//	operand := ref | 'single-quoted string' | number | true | false
//	ref     := "$" id ".output" | "$" id ".output." field | "$" id "." field
//
// && binds tighter than ||; there are no parentheses. == and != compare
// text (a number or boolean value is compared as its JSON text); the
// ordering operators compare numbers and fail on anything else. Inside a
// string, \' is a quote and \\ a backslash; any other backslash is literal.

// Ref is a reference to a node's output in a condition: Field is "" for
// $id.output, and the field name for $id.output.field and $id.field.
type Ref struct {
	NodeID string
	Field  string
}

// String is the canonical spelling: $id.output or $id.output.field.
func (r Ref) String() string {
	if r.Field == "" {
		return "$" + r.NodeID + ".output"
	}
	return "$" + r.NodeID + ".output." + r.Field
}

// Lookup supplies a referenced value to Eval: field is "" for the whole
// output. ok false means there is no value (the node did not run or has no
// such field); it compares as "". A non-nil err stops the evaluation.
type Lookup = func(nodeID string, field string) (value any, ok bool, err error)

// Expr is a parsed condition. It is immutable and safe for concurrent use.
type Expr struct {
	src string
	or  [][]cond // disjunction of conjunctions
}

type cond struct {
	left, right operand
	op          string
}

type litKind uint8

const (
	litNone litKind = iota // the operand is a Ref
	litString
	litNumber
	litBool
)

type operand struct {
	ref  Ref
	kind litKind
	text string  // string content, number source text, or "true"/"false"
	num  float64 // number literals, and string literals that hold a number
	isNm bool    // num is valid
}

// ErrWhenSyntax matches (errors.Is) every *WhenSyntaxError.
var ErrWhenSyntax = errors.New("when: syntax error")

// ErrNotANumber is wrapped by Eval when an ordering operator meets a value
// that is not a number.
var ErrNotANumber = errors.New("not a number")

// WhenSyntaxError is a condition that does not parse.
type WhenSyntaxError struct {
	Expr string
	Pos  int // byte offset in Expr
	Msg  string
}

func (e *WhenSyntaxError) Error() string {
	return fmt.Sprintf("when %q: %s", e.Expr, e.Detail())
}

// Detail is the message without the expression: "column 12: ...".
func (e *WhenSyntaxError) Detail() string {
	return fmt.Sprintf("column %d: %s", e.Pos+1, e.Msg)
}

// Is makes errors.Is(err, ErrWhenSyntax) true.
func (e *WhenSyntaxError) Is(target error) bool { return target == ErrWhenSyntax }

// ParseWhen parses a condition.
func ParseWhen(s string) (*Expr, error) {
	lx := &lexer{src: s}
	toks, err := lx.all()
	if err != nil {
		return nil, err
	}
	ps := &whenParser{src: s, toks: toks}
	e, err := ps.parse()
	if err != nil {
		return nil, err
	}
	e.src = s
	return e, nil
}

// Source is the text the expression was parsed from.
func (e *Expr) Source() string { return e.src }

// String is the canonical form: refs spelled $id.output[.field], single
// spaces, strings re-quoted. ParseWhen(e.String()) yields an equal Expr.
func (e *Expr) String() string {
	var b strings.Builder
	for i, and := range e.or {
		if i > 0 {
			b.WriteString(" || ")
		}
		for j, c := range and {
			if j > 0 {
				b.WriteString(" && ")
			}
			c.left.write(&b)
			b.WriteByte(' ')
			b.WriteString(c.op)
			b.WriteByte(' ')
			c.right.write(&b)
		}
	}
	return b.String()
}

func (o operand) write(b *strings.Builder) {
	switch o.kind {
	case litNone:
		b.WriteString(o.ref.String())
	case litString:
		b.WriteByte('\'')
		// Byte by byte: invalid UTF-8 must survive the round trip.
		for i := 0; i < len(o.text); i++ {
			if c := o.text[i]; c == '\'' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(o.text[i])
		}
		b.WriteByte('\'')
	default:
		b.WriteString(o.text)
	}
}

// Refs lists the distinct references in order of appearance.
func (e *Expr) Refs() []Ref {
	var out []Ref
	seen := map[Ref]bool{}
	add := func(o operand) {
		if o.kind == litNone && !seen[o.ref] {
			seen[o.ref] = true
			out = append(out, o.ref)
		}
	}
	for _, and := range e.or {
		for _, c := range and {
			add(c.left)
			add(c.right)
		}
	}
	return out
}

// renameWhenRefs renames the node ids of the references in condition src
// by rename (ids not in it are kept), leaving the rest of the text as it
// is. A condition that does not parse is returned unchanged.
func renameWhenRefs(src string, rename map[string]string) string {
	lx := &lexer{src: src}
	toks, err := lx.all()
	if err != nil {
		return src
	}
	var b strings.Builder
	last := 0
	for _, t := range toks {
		if t.kind != tokOperand || t.val.kind != litNone {
			continue
		}
		id := t.val.ref.NodeID
		to, ok := rename[id]
		if !ok || to == id {
			continue
		}
		start := t.pos + 1 // after '$'
		b.WriteString(src[last:start])
		b.WriteString(to)
		last = start + len(id)
	}
	if last == 0 {
		return src
	}
	b.WriteString(src[last:])
	return b.String()
}

// Eval evaluates the condition, asking lookup for each referenced value as
// needed (&& and || short-circuit). A nil Expr is true: no condition.
func (e *Expr) Eval(lookup func(nodeID string, field string) (value any, ok bool, err error)) (bool, error) {
	if e == nil {
		return true, nil
	}
	if lookup == nil {
		return false, errors.New("when: nil lookup")
	}
	for _, and := range e.or {
		all := true
		for _, c := range and {
			ok, err := c.eval(lookup)
			if err != nil {
				return false, fmt.Errorf("when %q: %w", e.src, err)
			}
			if !ok {
				all = false
				break
			}
		}
		if all {
			return true, nil
		}
	}
	return false, nil
}

// value is an operand's resolved value.
func (o operand) value(lookup Lookup) (any, error) {
	if o.kind != litNone {
		return nil, nil
	}
	v, ok, err := lookup(o.ref.NodeID, o.ref.Field)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.ref, err)
	}
	if !ok {
		return "", nil
	}
	return v, nil
}

func (c cond) eval(lookup Lookup) (bool, error) {
	lv, err := c.left.value(lookup)
	if err != nil {
		return false, err
	}
	rv, err := c.right.value(lookup)
	if err != nil {
		return false, err
	}
	switch c.op {
	case "==", "!=":
		eq := c.left.text2(lv) == c.right.text2(rv)
		return eq == (c.op == "=="), nil
	}
	l, err := c.left.number(lv)
	if err != nil {
		return false, err
	}
	r, err := c.right.number(rv)
	if err != nil {
		return false, err
	}
	switch c.op {
	case "<":
		return l < r, nil
	case ">":
		return l > r, nil
	case "<=":
		return l <= r, nil
	default:
		return l >= r, nil
	}
}

// text2 is the text an operand compares as for == and !=.
func (o operand) text2(v any) string {
	switch o.kind {
	case litNone:
		return ValueText(v)
	case litNumber:
		return numberText(o.num, o.text)
	default:
		return o.text
	}
}

func (o operand) number(v any) (float64, error) {
	if o.kind != litNone {
		return o.num, nil // the parser only lets numeric literals reach here
	}
	f, ok := valueNumber(v)
	if !ok {
		return 0, fmt.Errorf("%s is %s: %w", o.ref, quoteValue(v), ErrNotANumber)
	}
	return f, nil
}

func quoteValue(v any) string {
	s := ValueText(v)
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}

// ValueText is how a looked-up value compares for == and !=: strings as
// they are, nil as "", numbers and booleans (and anything else) as their
// JSON text.
func ValueText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case float64:
		return numberText(x, "")
	case float32:
		return numberText(float64(x), "")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// numberText formats a number as JSON does; integers keep every digit of
// their source text when that text is a plain integer.
func numberText(f float64, src string) string {
	if src != "" {
		s := strings.TrimPrefix(src, "+")
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return strconv.FormatInt(i, 10)
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	b, _ := json.Marshal(f)
	return string(b)
}

func valueNumber(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		f = float64(x)
	case int8:
		f = float64(x)
	case int16:
		f = float64(x)
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint:
		f = float64(x)
	case uint8:
		f = float64(x)
	case uint16:
		f = float64(x)
	case uint32:
		f = float64(x)
	case uint64:
		f = float64(x)
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, false
		}
	case string:
		var ok bool
		if f, ok = parseNumber(strings.TrimSpace(x)); !ok {
			return 0, false
		}
	case []byte:
		return valueNumber(string(x))
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// parseNumber accepts decimal numbers only (no hex, no "inf"/"nan", no
// underscores), as JSON and the condition grammar write them.
func parseNumber(s string) (float64, bool) {
	if s == "" || !isNumberText(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func isNumberText(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < len(s) && isDigit(s[i]) {
			i++
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '-' }

// Lexer.

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokOperand
	tokOp  // comparison operator
	tokAnd // &&
	tokOr  // ||
)

type token struct {
	kind tokKind
	pos  int
	op   string
	val  operand
}

type lexer struct {
	src string
	pos int
}

func (lx *lexer) fail(pos int, format string, args ...any) error {
	return &WhenSyntaxError{Expr: lx.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (lx *lexer) all() ([]token, error) {
	var toks []token
	for {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		if t.kind == tokEOF {
			return toks, nil
		}
		if len(toks) > 10000 {
			return nil, lx.fail(t.pos, "condition is too long")
		}
	}
}

func (lx *lexer) next() (token, error) {
	s := lx.src
	for lx.pos < len(s) && (s[lx.pos] == ' ' || s[lx.pos] == '\t' || s[lx.pos] == '\n' || s[lx.pos] == '\r') {
		lx.pos++
	}
	start := lx.pos
	if lx.pos >= len(s) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c := s[lx.pos]
	two := ""
	if lx.pos+1 < len(s) {
		two = s[lx.pos : lx.pos+2]
	}
	switch {
	case two == "&&":
		lx.pos += 2
		return token{kind: tokAnd, pos: start}, nil
	case two == "||":
		lx.pos += 2
		return token{kind: tokOr, pos: start}, nil
	case two == "==" || two == "!=" || two == "<=" || two == ">=":
		lx.pos += 2
		return token{kind: tokOp, pos: start, op: two}, nil
	case c == '<' || c == '>':
		lx.pos++
		return token{kind: tokOp, pos: start, op: string(c)}, nil
	case c == '=':
		return token{}, lx.fail(start, "'=' is not an operator; use ==")
	case c == '&' || c == '|':
		return token{}, lx.fail(start, "%q is not an operator; use %s%s", c, string(c), string(c))
	case c == '!':
		return token{}, lx.fail(start, "'!' is not an operator; use != to compare")
	case c == '(' || c == ')':
		return token{}, lx.fail(start, "parentheses are not supported (&& binds tighter than ||)")
	case c == '"':
		return token{}, lx.fail(start, "strings are single-quoted: 'text'")
	case c == '\'':
		return lx.str()
	case c == '$':
		return lx.ref()
	case isDigit(c) || c == '.' || ((c == '-' || c == '+') && lx.pos+1 < len(s) && (isDigit(s[lx.pos+1]) || s[lx.pos+1] == '.')):
		return lx.number()
	case isIdentStart(c):
		end := lx.pos
		for end < len(s) && isIdentChar(s[end]) {
			end++
		}
		word := s[lx.pos:end]
		lx.pos = end
		if word == "true" || word == "false" {
			return token{kind: tokOperand, pos: start, val: operand{kind: litBool, text: word}}, nil
		}
		return token{}, lx.fail(start, "unexpected word %q (strings must be single-quoted, node outputs written $id.output)", word)
	}
	return token{}, lx.fail(start, "unexpected character %q", rune(c))
}

func (lx *lexer) str() (token, error) {
	s := lx.src
	start := lx.pos
	lx.pos++ // opening quote
	var b strings.Builder
	for lx.pos < len(s) {
		c := s[lx.pos]
		switch {
		case c == '\\' && lx.pos+1 < len(s) && (s[lx.pos+1] == '\'' || s[lx.pos+1] == '\\'):
			b.WriteByte(s[lx.pos+1])
			lx.pos += 2
		case c == '\'':
			lx.pos++
			text := b.String()
			o := operand{kind: litString, text: text}
			o.num, o.isNm = parseNumber(strings.TrimSpace(text))
			return token{kind: tokOperand, pos: start, val: o}, nil
		default:
			b.WriteByte(c)
			lx.pos++
		}
	}
	return token{}, lx.fail(start, "unterminated string")
}

func (lx *lexer) number() (token, error) {
	s := lx.src
	start := lx.pos
	end := lx.pos
	if s[end] == '-' || s[end] == '+' {
		end++
	}
	for end < len(s) && (isDigit(s[end]) || s[end] == '.') {
		end++
	}
	if end < len(s) && (s[end] == 'e' || s[end] == 'E') {
		end++
		if end < len(s) && (s[end] == '-' || s[end] == '+') {
			end++
		}
		for end < len(s) && isDigit(s[end]) {
			end++
		}
	}
	text := s[start:end]
	if end < len(s) && (isIdentChar(s[end]) || s[end] == '.') {
		return token{}, lx.fail(start, "malformed number %q", s[start:min(end+1, len(s))])
	}
	f, ok := parseNumber(text)
	if !ok {
		return token{}, lx.fail(start, "malformed number %q", text)
	}
	lx.pos = end
	return token{kind: tokOperand, pos: start, val: operand{kind: litNumber, text: text, num: f, isNm: true}}, nil
}

func (lx *lexer) ref() (token, error) {
	s := lx.src
	start := lx.pos
	lx.pos++ // $
	if lx.pos >= len(s) || !isIdentStart(s[lx.pos]) {
		return token{}, lx.fail(start, "expected a node id after '$' (as in $classify.output)")
	}
	segStart := lx.pos
	for lx.pos < len(s) && isIdentChar(s[lx.pos]) {
		lx.pos++
	}
	id := s[segStart:lx.pos]
	var segs []string
	for lx.pos < len(s) && s[lx.pos] == '.' {
		lx.pos++
		b := lx.pos
		for lx.pos < len(s) && isIdentChar(s[lx.pos]) {
			lx.pos++
		}
		if b == lx.pos {
			return token{}, lx.fail(b, "expected a field name after '.'")
		}
		segs = append(segs, s[b:lx.pos])
	}
	r := Ref{NodeID: id}
	switch {
	case len(segs) == 0:
		return token{}, lx.fail(start, "$%s needs .output or .field (as in $%s.output)", id, id)
	case len(segs) == 1 && segs[0] == "output":
	case len(segs) == 1:
		r.Field = segs[0] // shorthand $id.field
	case len(segs) == 2 && segs[0] == "output":
		r.Field = segs[1]
	default:
		return token{}, lx.fail(start, "nested fields are not supported: use $%s.output.field with one field", id)
	}
	return token{kind: tokOperand, pos: start, val: operand{ref: r}}, nil
}

// Parser.

type whenParser struct {
	src  string
	toks []token
	i    int
}

func (ps *whenParser) fail(pos int, format string, args ...any) error {
	return &WhenSyntaxError{Expr: ps.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (ps *whenParser) peek() token { return ps.toks[ps.i] }

func (ps *whenParser) take() token {
	t := ps.toks[ps.i]
	if t.kind != tokEOF {
		ps.i++
	}
	return t
}

func (ps *whenParser) parse() (*Expr, error) {
	if ps.peek().kind == tokEOF {
		return nil, ps.fail(0, "empty condition")
	}
	e := &Expr{}
	for {
		and, err := ps.parseAnd()
		if err != nil {
			return nil, err
		}
		e.or = append(e.or, and)
		t := ps.take()
		switch t.kind {
		case tokEOF:
			return e, nil
		case tokOr:
		default:
			return nil, ps.fail(t.pos, "expected && or || or the end, found %s", describeTok(ps.src, t))
		}
	}
}

func (ps *whenParser) parseAnd() ([]cond, error) {
	var and []cond
	for {
		c, err := ps.parseCond()
		if err != nil {
			return nil, err
		}
		and = append(and, c)
		if ps.peek().kind != tokAnd {
			return and, nil
		}
		ps.take()
	}
}

func (ps *whenParser) parseCond() (cond, error) {
	lt := ps.take()
	if lt.kind != tokOperand {
		return cond{}, ps.fail(lt.pos, "expected $id.output or a value, found %s", describeTok(ps.src, lt))
	}
	opt := ps.take()
	if opt.kind != tokOp {
		return cond{}, ps.fail(opt.pos, "expected a comparison (== != < > <= >=) after %s, found %s", describeTok(ps.src, lt), describeTok(ps.src, opt))
	}
	rt := ps.take()
	if rt.kind != tokOperand {
		return cond{}, ps.fail(rt.pos, "expected $id.output or a value after %s, found %s", opt.op, describeTok(ps.src, rt))
	}
	c := cond{left: lt.val, op: opt.op, right: rt.val}
	if c.op != "==" && c.op != "!=" {
		for _, side := range []struct {
			t token
			o operand
		}{{lt, lt.val}, {rt, rt.val}} {
			if side.o.kind != litNone && !side.o.isNm {
				return cond{}, ps.fail(side.t.pos, "%s compares numbers, but %s is not a number", c.op, describeTok(ps.src, side.t))
			}
		}
	}
	return c, nil
}

func describeTok(src string, t token) string {
	switch t.kind {
	case tokEOF:
		return "the end"
	case tokAnd:
		return "&&"
	case tokOr:
		return "||"
	case tokOp:
		return t.op
	}
	var b strings.Builder
	t.val.write(&b)
	return b.String()
}
