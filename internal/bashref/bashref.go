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
// prints exactly the output. Two kinds of places cannot expand a variable
// safely and are handled apart:
//
//   - Where bash evaluates text as arithmetic, the value must be a decimal
//     integer: there an array subscript in the value (a[$(cmd)]) runs cmd,
//     quoted or not. These places are $(( )), $[ ], (( )), the operands of
//     [[ -eq ]] (-ne, -lt, -le, -gt, -ge), a substring's offset and length
//     (${x:1:2}), an indexed array's subscript (${a[i]}, a[i]=v; not an
//     associative array declared with -A in the script), the arguments of
//     let, and the assignment (name=...) of a variable the script declares
//     with -i. A value that reaches arithmetic another way (through a
//     variable: x=$a.output; $(( x )), a command's output, read) is
//     evaluated too: check such a value in the script before using it.
//   - Inside a quoted here-document (<<'EOF') the value is inserted as
//     text, refused if one of its lines would end the here-document early
//     (or, in a command substitution, if it holds the byte 0x01, which bash
//     drops).
//
// A reference inside backquotes is refused (use $( ) instead).

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
	shTop       shKind = iota // commands (the script, or inside $( ))
	shDQ                      // "..."
	shSQ                      // '...'
	shANSI                    // $'...'
	shParam                   // ${...}
	shArith                   // $(( )) or (( ))
	shBacktick                // `...`
	shSubscript               // an array subscript: ${a[...]}, or a[...]= at a word's start
	shHere                    // the body of an unquoted here-document
)

type shFrame struct {
	kind    shKind
	depth   int  // unmatched '(' (shTop, shArith) or '[' (shSubscript, $[ ])
	cases   int  // open case statements (shTop): ')' ends a pattern there
	sub     bool // shTop opened by $( : an unmatched ')' closes it
	outerDQ bool // shParam or shSubscript inside double quotes (or a here-document)

	bracket bool // shArith opened by $[ : ']' closes it
	// arith: bash evaluates the text here as arithmetic (shParam past the
	// ':' of a substring, shSubscript of an indexed array).
	arith bool
	name  string // shParam, shSubscript: the parameter's name
	atOp  bool   // shParam: right after the name (or its subscript)
	// assign: shSubscript of a word name[...]; it is an assignment, and
	// arithmetic, only if = or += follows the ']'. pending holds the values
	// referenced inside until then.
	assign  bool
	pending []int

	// shTop: a command may start here (cmdStart); in the arguments of let;
	// in a word assigning a variable declared with -i (intWord); inside
	// [[ ]] (cond).
	cmdStart bool
	let      bool
	intWord  bool
	cond     *condState
}

// condState follows the words of a [[ ]] to find the operands of its
// arithmetic comparisons, which may come before the operator.
type condState struct {
	word   int  // index of the current word
	inWord bool // the current word has begun
	arith  map[int]bool
	refs   []condRef
}

type condRef struct{ word, idx int }

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
	decl    declared
	inHere  bool // lexing the body of an unquoted here-document
}

// declared are the variables a script declares as integers (-i) and as
// associative arrays (-A), wherever it does.
type declared struct{ ints, assoc map[string]bool }

var declRE = regexp.MustCompile(`(?:^|[\s;&|(])(?:declare|typeset|local)((?:[ \t]+[-+][A-Za-z]+)+)[ \t]+([^;&|\n)]*)`)

func declarations(script string) declared {
	d := declared{ints: map[string]bool{}, assoc: map[string]bool{}}
	for _, m := range declRE.FindAllStringSubmatch(script, -1) {
		var ints, assoc bool
		for _, o := range strings.Fields(m[1]) {
			if o[0] == '-' {
				ints = ints || strings.ContainsRune(o, 'i')
				assoc = assoc || strings.ContainsRune(o, 'A')
			}
		}
		for _, w := range strings.Fields(m[2]) {
			name := w[:nameLen(w)]
			if name == "" {
				continue
			}
			if ints {
				d.ints[name] = true
			}
			if assoc {
				d.assoc[name] = true
			}
		}
	}
	return d
}

// nameLen is the length of the shell name at the start of s.
func nameLen(s string) int {
	if s == "" || !isNameStart(s[0]) {
		return 0
	}
	n := 1
	for n < len(s) && (isNameStart(s[n]) || s[n] >= '0' && s[n] <= '9') {
		n++
	}
	return n
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// Render replaces the value tokens of script with quoted expansions
// fitting their context (see above). vals[i] is the value of token i.
func Render(script string, vals []string) (string, error) {
	if !strings.Contains(script, "\x00") {
		return script, nil
	}
	l := &shLexer{s: script, vals: vals, stack: []shFrame{{kind: shTop, cmdStart: true}}, wordBeg: true, decl: declarations(script)}
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
			if err := l.checkRef(idx); err != nil {
				return err
			}
			exp, err := l.expansion(f, idx)
			if err != nil {
				return err
			}
			l.out.WriteString(exp)
			if f.kind == shTop && f.cond != nil {
				f.cond.inWord = true
			}
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
		case shHere:
			if l.expansionStart(f) {
				continue
			}
			if c == '\\' {
				l.escape()
			} else {
				l.copyN(1)
			}
		case shSubscript:
			if l.expansionStart(f) || l.quoteStart(f, c) {
				continue
			}
			switch {
			case c == '[':
				f.depth++
				l.copyN(1)
			case c == ']' && f.depth > 0:
				f.depth--
				l.copyN(1)
			case c == ']':
				l.copyN(1)
				err = l.endSubscript()
			case c == '\n' && f.assign:
				l.pop() // not a subscript after all: bash ends the word
			default:
				l.copyN(1)
			}
		case shParam:
			if f.atOp {
				f.atOp = false
				if c == '[' {
					l.copyN(1)
					f.atOp = true // a substring may follow: ${a[1]:2}
					l.push(shFrame{kind: shSubscript, name: f.name, outerDQ: f.outerDQ, arith: !l.decl.assoc[f.name]})
					continue
				}
				if c == ':' && !strings.ContainsRune("-=?+", rune(l.peek(1))) {
					f.arith = true // ${x:offset:length}
					l.copyN(1)
					continue
				}
			}
			if l.expansionStart(f) || l.quoteStart(f, c) {
				continue
			}
			if c == '}' {
				l.copyN(1)
				l.pop()
			} else {
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
			case '[':
				if f.bracket {
					f.depth++
				}
				l.copyN(1)
			case ']':
				l.copyN(1)
				if f.bracket {
					if f.depth == 0 {
						l.pop()
					} else {
						f.depth--
					}
				}
			case '(':
				if !f.bracket {
					f.depth++
				}
				l.copyN(1)
			case ')':
				switch {
				case f.bracket:
					l.copyN(1)
				case f.depth > 0:
					f.depth--
					l.copyN(1)
				case l.peek(1) == ')':
					l.copyN(2)
					l.pop()
				default:
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

// quoteStart handles a backslash or a quote inside ${ } or a subscript,
// where single quotes quote only outside double quotes.
func (l *shLexer) quoteStart(f *shFrame, c byte) bool {
	switch {
	case c == '\\':
		l.escape()
	case c == '"':
		l.copyN(1)
		l.push(shFrame{kind: shDQ})
	case c == '\'' && !f.outerDQ:
		l.copyN(1)
		l.push(shFrame{kind: shSQ})
	default:
		return false
	}
	return true
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
			l.push(shFrame{kind: shTop, sub: true, cmdStart: true})
			l.wordBeg = true
		}
		return true
	case '[':
		l.copyN(2)
		l.push(shFrame{kind: shArith, bracket: true})
		return true
	case '{':
		l.copyN(2)
		outer := f.kind == shDQ || f.kind == shHere || ((f.kind == shParam || f.kind == shSubscript) && f.outerDQ)
		l.push(shFrame{kind: shParam, outerDQ: outer})
		l.paramName()
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
	if isShellMeta(c) {
		f.endWord(c)
	} else if l.wordBeg {
		if done, err := l.startWord(f); done || err != nil {
			return err
		}
	}
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
	var body strings.Builder // quoted: rendered line by line; unquoted: as written, rendered at its end
	cont := false            // the previous line ended in a line continuation (unquoted only)
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
			if err := l.writeHeredocBody(body.String(), h); err != nil {
				return err
			}
			l.copyN(len(line))
			if end >= 0 {
				l.copyN(1)
			}
			return nil
		}
		text := line
		if h.quoted {
			rendered, err := l.heredocLine(line, h)
			if err != nil {
				return err
			}
			text = rendered
		}
		body.WriteString(text)
		l.i += len(line)
		if end >= 0 {
			body.WriteByte('\n')
			l.i++
		}
		cont = !h.quoted && trailingBackslashes(line)%2 == 1
	}
	// Unterminated: bash reads to the end of the script.
	return l.writeHeredocBody(body.String(), h)
}

// writeHeredocBody writes a here-document's body. A quoted one holds the
// values as text; an unquoted one is expanded by bash as in double quotes,
// $(( )), $( ) and ${ } included, so its text is lexed as such.
func (l *shLexer) writeHeredocBody(body string, h heredocSpec) error {
	if h.quoted {
		if err := checkHeredocBody(body, h); err != nil {
			return err
		}
		l.out.WriteString(body)
		return nil
	}
	if !strings.Contains(body, "\x00") {
		l.out.WriteString(body)
		return nil
	}
	sub := &shLexer{s: body, vals: l.vals, stack: []shFrame{{kind: shHere}}, decl: l.decl, inHere: true}
	if err := sub.run(); err != nil {
		return err
	}
	// A quoted here-document inside it holds values as text: none may end
	// this one early either.
	if err := checkHeredocBody(sub.out.String(), h); err != nil {
		return err
	}
	l.out.WriteString(sub.out.String())
	return nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// heredocLine renders a line of a quoted here-document: each value is
// inserted as text, as no expansion happens there.
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
		if h.inSub && strings.Contains(l.vals[idx], "\x01") {
			// bash (5.2) reads 0x01 there as its own quoting mark: a
			// 0x01 before another 0x01 or 0x7f is dropped.
			return "", fmt.Errorf("%w: a value holding the byte 0x01 cannot be placed in a quoted here-document inside $( ), where bash drops it; use an unquoted here-document or a variable", ErrUnsafe)
		}
		if v := l.vals[idx]; l.inHere && (strings.Contains(v, "\\\n") || strings.HasSuffix(v, "\\")) {
			// bash reads the unquoted here-document around this one
			// first, joining a line that ends in a backslash to the next.
			return "", fmt.Errorf("%w: in a quoted here-document inside an unquoted one, a value's line cannot end with a backslash (the outer here-document joins it to the next line); use a variable", ErrUnsafe)
		}
		b.WriteString(l.vals[idx])
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
		// Inside $( ), bash (5.2) also ends the here-document at a line
		// that starts with its delimiter and holds a ')' anywhere: the
		// command substitution closes there and what follows runs.
		if h.inSub && strings.HasPrefix(line, h.delim) && strings.Contains(line[len(h.delim):], ")") {
			return fmt.Errorf("%w: a line of a here-document inside $( ) starts with its delimiter %q and holds a ')' (%q): bash would end the here-document and the command substitution there", ErrUnsafe, h.delim, clip(line, 60))
		}
	}
	return nil
}

// integerRE is what bash evaluates as itself in every arithmetic context:
// a decimal integer (no leading zero: bash reads 010 as octal, 08 as an
// error) short enough not to overflow.
var integerRE = regexp.MustCompile(`^[ \t\n]*[-+]?(0|[1-9][0-9]{0,17})[ \t\n]*$`)

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
	case shParam, shSubscript:
		if f.outerDQ {
			return "${" + name + "}", nil
		}
		return `"${` + name + `}"`, nil
	case shHere:
		return "${" + name + "}", nil
	case shArith:
		return strings.TrimSpace(l.vals[idx]), nil // an integer (checkRef)
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

// checkRef refuses value idx where bash would evaluate it as arithmetic
// and it is not an integer, looking outwards from the innermost context
// up to the command (a command substitution's output is not the value).
// Where that is decided later (a [[ ]] operand, a name[...] word) the
// value is recorded for then.
func (l *shLexer) checkRef(idx int) error {
	for i := len(l.stack) - 1; i >= 0; i-- {
		f := &l.stack[i]
		switch f.kind {
		case shArith:
			return l.needInteger(idx, "an arithmetic expression")
		case shParam:
			if f.arith {
				return l.needInteger(idx, "a substring's offset or length (${name:offset:length})")
			}
		case shSubscript:
			if f.assign {
				f.pending = append(f.pending, idx)
			} else if f.arith {
				return l.needInteger(idx, "an array subscript")
			}
		case shTop:
			switch {
			case f.let:
				return l.needInteger(idx, "the arguments of let")
			case f.intWord:
				return l.needInteger(idx, "the assignment of an integer variable (declared with -i)")
			case f.cond != nil:
				f.cond.refs = append(f.cond.refs, condRef{word: f.cond.word, idx: idx})
			}
			return nil
		case shBacktick, shHere:
			return nil
		}
	}
	return nil
}

func (l *shLexer) needInteger(idx int, where string) error {
	if v := l.vals[idx]; !integerRE.MatchString(v) {
		return fmt.Errorf("%w: a value used in %s must be an integer (decimal, without leading zeros), got %q: bash evaluates anything else there as an expression, and an array subscript in it runs commands", ErrUnsafe, where, clip(v, 60))
	}
	return nil
}

// paramName copies the name after ${ (with a # or ! before it) and notes
// it in the frame, so that a subscript or a substring after it is known.
func (l *shLexer) paramName() {
	f := l.top()
	if c := l.peek(0); (c == '#' || c == '!') && l.peek(1) != '}' {
		l.copyN(1)
	}
	n := 0
	switch c := l.peek(0); {
	case isNameStart(c):
		n = nameLen(l.s[l.i:])
	case c >= '0' && c <= '9':
		for c := l.peek(n); c >= '0' && c <= '9'; c = l.peek(n) {
			n++
		}
	case c != 0xff && strings.IndexByte("@*#?-$!", c) >= 0:
		n = 1
	}
	f.name = l.s[l.i : l.i+n]
	f.atOp = n > 0
	l.copyN(n)
}

// endSubscript closes a subscript: one of a word name[...] was an
// assignment, and arithmetic for an indexed array, if = or += follows.
func (l *shLexer) endSubscript() error {
	f := *l.top()
	l.pop()
	if !f.assign || l.decl.assoc[f.name] {
		return nil
	}
	if rest := l.s[l.i:]; !strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "+=") {
		return nil
	}
	for _, idx := range f.pending {
		if err := l.needInteger(idx, "an array subscript"); err != nil {
			return err
		}
	}
	return nil
}

// arithOps are the [[ ]] operators whose operands bash evaluates as
// arithmetic.
var arithOps = []string{"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}

// Reserved words after which a command may still start.
var cmdPrefixes = []string{"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}

// startWord looks at a word starting at l.i in a command context: [[ and
// ]], the operators of [[ ]], let, an assignment to an integer variable, a
// subscripted assignment name[...]=. done: it copied what it read.
func (l *shLexer) startWord(f *shFrame) (done bool, err error) {
	if f.cond != nil {
		if l.keyword("]]") {
			for _, r := range f.cond.refs {
				if f.cond.arith[r.word] {
					if err := l.needInteger(r.idx, "a numeric comparison ([[ -eq ]] and the like)"); err != nil {
						return true, err
					}
				}
			}
			f.cond = nil
			l.copyN(2)
			l.wordBeg = false
			return true, nil
		}
		f.cond.inWord = true
		for _, op := range arithOps {
			if l.keyword(op) {
				f.cond.arith[f.cond.word-1] = true
				f.cond.arith[f.cond.word+1] = true
			}
		}
	} else if l.keyword("[[") {
		f.cond = &condState{arith: map[int]bool{}}
		f.cmdStart = false
		l.copyN(2)
		l.wordBeg = false
		return true, nil
	}
	if f.cmdStart {
		f.cmdStart = false
		for _, w := range cmdPrefixes {
			f.cmdStart = f.cmdStart || l.keyword(w)
		}
		f.let = l.keyword("let")
	}
	n := nameLen(l.s[l.i:])
	if n == 0 {
		return false, nil
	}
	switch rest := l.s[l.i+n:]; {
	case l.decl.ints[l.s[l.i:l.i+n]] && (strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "+=")):
		f.intWord = true
	case strings.HasPrefix(rest, "["):
		// Read as a subscript only where the line goes on to ]= or ]+=:
		// any other such word is a glob or an argument, lexed as usual.
		line, _, _ := strings.Cut(rest, "\n")
		if !strings.Contains(line, "]=") && !strings.Contains(line, "]+=") {
			return false, nil
		}
		name := l.s[l.i : l.i+n]
		l.copyN(n + 1)
		l.wordBeg = false
		l.push(shFrame{kind: shSubscript, name: name, assign: true})
		return true, nil
	}
	return false, nil
}

// endWord notes a metacharacter c at the level of this shTop frame: a word
// ends, and after a command's end another may start.
func (f *shFrame) endWord(c byte) {
	if f.cond != nil && f.cond.inWord {
		f.cond.word++
		f.cond.inWord = false
	}
	f.intWord = false
	switch c {
	case '\n', ';', '&', '|', '(', ')':
		f.let = false
		f.cmdStart = true
	}
}
