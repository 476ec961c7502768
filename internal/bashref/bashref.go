// Package bashref puts values into bash scripts without letting bash parse
// them: a small lexer of bash's quoting contexts turns each value token
// into a quoted expansion of an environment variable that fits where it
// stands. See the comment below on how node outputs reach a script.
package bashref

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// How node outputs reach a bash script
//
// A substituted value never becomes script text: each $id.output (and
// $ARTIFACTS_DIR, $WORKFLOW_ID, $BASE_BRANCH, $DOCS_DIR) is replaced by a
// quoted expansion of an environment variable SWITCHYARD_REF_<n> holding the
// value, written to fit where the reference stands:
//
//	printf %s $a.output        ->  printf %s "${SWITCHYARD_REF_1}"
//	echo "got $a.output"       ->  echo "got ${SWITCHYARD_REF_1}"
//	echo 'got $a.output'       ->  echo 'got '"${SWITCHYARD_REF_1}"''
//
// So whatever an output holds, bash only ever expands it, never parses it:
// no output can inject commands, and a reference inside quotes still
// prints exactly the output. Two places cannot expand a variable safely and
// are handled apart: inside an arithmetic expression ($(( )), (( ))) the
// value must be an integer (bash would evaluate anything else as code), and
// inside a quoted here-document (<<'EOF') the value is inserted as text,
// refused if one of its lines would end the here-document early (or, in a
// command substitution, if it holds the byte 0x01, which bash drops). A
// reference inside backquotes is refused (use $( ) instead).

// Token marks the place of substituted value i in a script until
// Render knows the quoting context there. NUL cannot occur in a bash
// script, so tokens never collide with script text.
func Token(i int) string { return "\x00" + strconv.Itoa(i) + "\x00" }

// EnvName is the environment variable holding substituted value i.
func EnvName(i int) string { return "SWITCHYARD_REF_" + strconv.Itoa(i+1) }

// ErrUnsafe is wrapped by errors about references bash cannot take safely.
var ErrUnsafe = errors.New("unsafe reference in bash script")

type shKind int

const (
	shTop      shKind = iota // commands (the script, or inside $( ))
	shDQ                     // "..."
	shSQ                     // '...'
	shANSI                   // $'...'
	shParam                  // ${...}
	shArith                  // $(( )) or (( ))
	shBacktick               // `...`
)

type shFrame struct {
	kind    shKind
	depth   int  // unmatched '(' (shTop, shArith)
	cases   int  // open case statements (shTop): ')' ends a pattern there
	sub     bool // shTop opened by $( : an unmatched ')' closes it
	outerDQ bool // shParam inside double quotes
}

type heredocSpec struct {
	delim  string
	quoted bool
	dash   bool
	inSub  bool // inside a command substitution
}

type shLexer struct {
	s       string
	vals    []string
	i       int
	out     strings.Builder
	stack   []shFrame
	pending []heredocSpec
	wordBeg bool
}

// Render replaces the value tokens of script with quoted expansions
// fitting their context (see above). vals[i] is the value of token i.
func Render(script string, vals []string) (string, error) {
	if !strings.Contains(script, "\x00") {
		return script, nil
	}
	l := &shLexer{s: script, vals: vals, stack: []shFrame{{kind: shTop}}, wordBeg: true}
	l.out.Grow(len(script) + 16*len(vals))
	if err := l.run(); err != nil {
		return "", err
	}
	return l.out.String(), nil
}

func (l *shLexer) top() *shFrame  { return &l.stack[len(l.stack)-1] }
func (l *shLexer) push(f shFrame) { l.stack = append(l.stack, f) }
func (l *shLexer) pop() {
	if len(l.stack) > 1 {
		l.stack = l.stack[:len(l.stack)-1]
	}
}

func (l *shLexer) peek(k int) byte {
	if l.i+k < len(l.s) {
		return l.s[l.i+k]
	}
	return 0xff
}

func (l *shLexer) copyN(n int) {
	if l.i+n > len(l.s) {
		n = len(l.s) - l.i
	}
	l.out.WriteString(l.s[l.i : l.i+n])
	l.i += n
}

// token reads the token at l.i and returns its index.
func (l *shLexer) token() (int, error) {
	end := strings.IndexByte(l.s[l.i+1:], 0)
	if end < 0 {
		return 0, fmt.Errorf("%w: malformed value marker", ErrUnsafe)
	}
	idx, err := strconv.Atoi(l.s[l.i+1 : l.i+1+end])
	if err != nil || idx < 0 || idx >= len(l.vals) {
		return 0, fmt.Errorf("%w: malformed value marker", ErrUnsafe)
	}
	l.i += end + 2
	return idx, nil
}

func (l *shLexer) run() error {
	for l.i < len(l.s) {
		c := l.s[l.i]
		f := l.top()
		if c == 0 {
			idx, err := l.token()
			if err != nil {
				return err
			}
			exp, err := l.expansion(f, idx)
			if err != nil {
				return err
			}
			l.out.WriteString(exp)
			l.wordBeg = false
			continue
		}
		var err error
		switch f.kind {
		case shSQ:
			l.copyN(1)
			if c == '\'' {
				l.pop()
			}
		case shANSI:
			switch {
			case c == '\\' && l.peek(1) == 0:
				l.out.WriteString(`\\`)
				l.i++
			case c == '\\':
				l.copyN(2)
			default:
				l.copyN(1)
				if c == '\'' {
					l.pop()
				}
			}
		case shBacktick:
			switch c {
			case '\\':
				if l.peek(1) == 0 {
					l.out.WriteString(`\\`)
					l.i++
				} else {
					l.copyN(2)
				}
			case '`':
				l.copyN(1)
				l.pop()
			default:
				l.copyN(1)
			}
		case shDQ:
			if l.expansionStart(f) {
				continue
			}
			switch c {
			case '\\':
				l.escape()
			case '"':
				l.copyN(1)
				l.pop()
			default:
				l.copyN(1)
			}
		case shParam:
			if l.expansionStart(f) {
				continue
			}
			switch {
			case c == '\\':
				l.escape()
			case c == '}':
				l.copyN(1)
				l.pop()
			case c == '"':
				l.copyN(1)
				l.push(shFrame{kind: shDQ})
			case c == '\'' && !f.outerDQ:
				l.copyN(1)
				l.push(shFrame{kind: shSQ})
			default:
				l.copyN(1)
			}
		case shArith:
			if l.expansionStart(f) {
				continue
			}
			switch c {
			case '\\':
				l.escape()
			case '"':
				l.copyN(1)
				l.push(shFrame{kind: shDQ})
			case '\'':
				l.copyN(1)
				l.push(shFrame{kind: shSQ})
			case '(':
				f.depth++
				l.copyN(1)
			case ')':
				if f.depth > 0 {
					f.depth--
					l.copyN(1)
				} else if l.peek(1) == ')' {
					l.copyN(2)
					l.pop()
				} else {
					l.copyN(1)
					l.pop()
				}
			default:
				l.copyN(1)
			}
		case shTop:
			err = l.topChar(f, c)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// escape copies a backslash escape; a backslash right before a reference
// stays a literal backslash in front of the value.
func (l *shLexer) escape() {
	if l.peek(1) == 0 {
		l.out.WriteString(`\\`)
		l.i++
		return
	}
	l.copyN(2)
}

// expansionStart handles $( $(( ${ $' $" and ` where they open a context.
func (l *shLexer) expansionStart(f *shFrame) bool {
	c := l.s[l.i]
	if c == '`' {
		l.copyN(1)
		l.push(shFrame{kind: shBacktick})
		return true
	}
	if c != '$' {
		return false
	}
	switch l.peek(1) {
	case '(':
		if l.peek(2) == '(' {
			l.copyN(3)
			l.push(shFrame{kind: shArith})
		} else {
			l.copyN(2)
			l.push(shFrame{kind: shTop, sub: true})
			l.wordBeg = true
		}
		return true
	case '{':
		l.copyN(2)
		l.push(shFrame{kind: shParam, outerDQ: f.kind == shDQ || (f.kind == shParam && f.outerDQ)})
		return true
	case '\'':
		if f.kind == shTop || (f.kind == shParam && !f.outerDQ) {
			l.copyN(2)
			l.push(shFrame{kind: shANSI})
			return true
		}
	case '"':
		if f.kind == shTop {
			l.copyN(2)
			l.push(shFrame{kind: shDQ})
			return true
		}
	}
	return false
}

func isShellMeta(c byte) bool {
	switch c {
	case ' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>':
		return true
	}
	return false
}

// keyword reports whether word w starts at l.i and ends there.
func (l *shLexer) keyword(w string) bool {
	if !strings.HasPrefix(l.s[l.i:], w) {
		return false
	}
	next := l.peek(len(w))
	return next == 0xff || isShellMeta(next)
}

func (l *shLexer) topChar(f *shFrame, c byte) error {
	if l.expansionStart(f) {
		l.wordBeg = false
		return nil
	}
	beg := l.wordBeg
	l.wordBeg = isShellMeta(c)
	switch {
	case c == '\'':
		l.copyN(1)
		l.push(shFrame{kind: shSQ})
	case c == '"':
		l.copyN(1)
		l.push(shFrame{kind: shDQ})
	case c == '\\':
		l.escape()
	case c == '#' && beg:
		l.comment()
		l.wordBeg = true
	case c == '(' && l.peek(1) == '(' && beg:
		l.copyN(2)
		l.push(shFrame{kind: shArith})
	case c == '(':
		f.depth++
		l.copyN(1)
	case c == ')':
		switch {
		case f.depth > 0:
			f.depth--
		case f.cases > 0: // a case pattern
		case f.sub:
			l.copyN(1)
			l.pop()
			l.wordBeg = false
			return nil
		}
		l.copyN(1)
	case c == '<' && l.peek(1) == '<':
		if l.peek(2) == '<' {
			l.copyN(3) // here-string
			return nil
		}
		return l.heredocStart()
	case c == '\n':
		l.copyN(1)
		if len(l.pending) > 0 {
			return l.heredocBodies()
		}
	case beg && l.keyword("case"):
		f.cases++
		l.copyN(4)
	case beg && l.keyword("esac"):
		if f.cases > 0 {
			f.cases--
		}
		l.copyN(4)
	default:
		l.copyN(1)
	}
	return nil
}

// comment copies a comment; a reference in it becomes the variable's name,
// which keeps the value (and any newline in it) out of the script.
func (l *shLexer) comment() {
	for l.i < len(l.s) && l.s[l.i] != '\n' {
		if l.s[l.i] == 0 {
			idx, err := l.token()
			if err != nil {
				l.i++
				continue
			}
			l.out.WriteString("${" + EnvName(idx) + "}")
			continue
		}
		l.copyN(1)
	}
}

// heredocStart reads a here-document operator and its delimiter word.
func (l *shLexer) heredocStart() error {
	l.copyN(2)
	h := heredocSpec{}
	for _, f := range l.stack {
		h.inSub = h.inSub || f.sub
	}
	if l.peek(0) == '-' {
		h.dash = true
		l.copyN(1)
	}
	for l.peek(0) == ' ' || l.peek(0) == '\t' {
		l.copyN(1)
	}
	var delim strings.Builder
	for l.i < len(l.s) {
		c := l.s[l.i]
		if c == 0 {
			return fmt.Errorf("%w: a reference cannot be a here-document delimiter", ErrUnsafe)
		}
		if isShellMeta(c) {
			break
		}
		switch c {
		case '\'', '"':
			h.quoted = true
			end := strings.IndexByte(l.s[l.i+1:], c)
			if end < 0 {
				end = len(l.s) - l.i - 1
			}
			delim.WriteString(l.s[l.i+1 : l.i+1+end])
			l.copyN(end + 2)
		case '\\':
			h.quoted = true
			if l.i+1 < len(l.s) {
				delim.WriteByte(l.s[l.i+1])
			}
			l.copyN(2)
		default:
			delim.WriteByte(c)
			l.copyN(1)
		}
	}
	if strings.Contains(delim.String(), "\x00") {
		return fmt.Errorf("%w: a reference cannot be a here-document delimiter", ErrUnsafe)
	}
	h.delim = delim.String()
	l.pending = append(l.pending, h)
	l.wordBeg = false
	return nil
}

// heredocBodies copies the bodies of the pending here-documents, which
// start after the newline just copied.
func (l *shLexer) heredocBodies() error {
	pending := l.pending
	l.pending = nil
	for _, h := range pending {
		if err := l.heredocBody(h); err != nil {
			return err
		}
	}
	l.wordBeg = true
	return nil
}

func (l *shLexer) heredocBody(h heredocSpec) error {
	var body strings.Builder
	cont := false // the previous line ended in a line continuation (unquoted only)
	for l.i < len(l.s) {
		end := strings.IndexByte(l.s[l.i:], '\n')
		line := l.s[l.i:]
		if end >= 0 {
			line = l.s[l.i : l.i+end]
		}
		check := line
		if h.dash {
			check = strings.TrimLeft(check, "\t")
		}
		if !cont && check == h.delim {
			if err := checkHeredocBody(body.String(), h); err != nil {
				return err
			}
			l.out.WriteString(body.String())
			l.copyN(len(line))
			if end >= 0 {
				l.copyN(1)
			}
			return nil
		}
		rendered, err := l.heredocLine(line, h)
		if err != nil {
			return err
		}
		body.WriteString(rendered)
		l.i += len(line)
		if end >= 0 {
			body.WriteByte('\n')
			l.i++
		}
		cont = !h.quoted && trailingBackslashes(line)%2 == 1
	}
	// Unterminated: bash reads to the end of the script.
	if err := checkHeredocBody(body.String(), h); err != nil {
		return err
	}
	l.out.WriteString(body.String())
	return nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

func (l *shLexer) heredocLine(line string, h heredocSpec) (string, error) {
	if !strings.Contains(line, "\x00") {
		return line, nil
	}
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != 0 {
			b.WriteByte(line[i])
			i++
			continue
		}
		end := strings.IndexByte(line[i+1:], 0)
		idx, err := strconv.Atoi(line[i+1 : i+1+max(end, 0)])
		if end < 0 || err != nil || idx < 0 || idx >= len(l.vals) {
			return "", fmt.Errorf("%w: malformed value marker", ErrUnsafe)
		}
		i += end + 2
		if h.quoted {
			if h.inSub && strings.Contains(l.vals[idx], "\x01") {
				// bash (5.2) reads 0x01 there as its own quoting mark: a
				// 0x01 before another 0x01 or 0x7f is dropped.
				return "", fmt.Errorf("%w: a value holding the byte 0x01 cannot be placed in a quoted here-document inside $( ), where bash drops it; use an unquoted here-document or a variable", ErrUnsafe)
			}
			b.WriteString(l.vals[idx]) // no expansion happens here: the text is the value
			continue
		}
		if trailingBackslashes(b.String())%2 == 1 {
			b.WriteByte('\\') // keep the author's backslash literal, not escaping our '$'
		}
		b.WriteString("${" + EnvName(idx) + "}")
	}
	return b.String(), nil
}

// checkHeredocBody refuses a body in which a line ends the here-document
// before its real end: that line and what follows would run as commands.
func checkHeredocBody(body string, h heredocSpec) error {
	for _, line := range strings.Split(body, "\n") {
		if h.dash {
			line = strings.TrimLeft(line, "\t")
		}
		if line == h.delim {
			return fmt.Errorf("%w: a substituted value holds the line %q, which would end the here-document early", ErrUnsafe, h.delim)
		}
	}
	return nil
}

var integerRE = regexp.MustCompile(`^\s*[-+]?[0-9]+\s*$`)

// expansion is the text standing for value idx in frame f.
func (l *shLexer) expansion(f *shFrame, idx int) (string, error) {
	name := EnvName(idx)
	switch f.kind {
	case shDQ:
		return "${" + name + "}", nil
	case shSQ:
		return `'"${` + name + `}"'`, nil
	case shANSI:
		return `'"${` + name + `}"$'`, nil
	case shParam:
		if f.outerDQ {
			return "${" + name + "}", nil
		}
		return `"${` + name + `}"`, nil
	case shArith:
		v := l.vals[idx]
		if !integerRE.MatchString(v) {
			return "", fmt.Errorf("%w: a value used in an arithmetic expression must be an integer, got %q", ErrUnsafe, clip(v, 60))
		}
		return strings.TrimSpace(v), nil
	case shBacktick:
		return "", fmt.Errorf("%w: references inside backquotes are not supported; use $( ) instead", ErrUnsafe)
	}
	return `"${` + name + `}"`, nil
}

// clip shortens s for messages.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
