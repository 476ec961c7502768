package llm

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// parseChatChunk fills c from one streamed chat chunk as json.Unmarshal
// would, for the fields chatChunk names, without reflection and in one
// pass over the bytes: invalid JSON is an error wherever it is, a field of
// the wrong type is an error (the first one, once the rest is read, as
// json.Unmarshal reports it), other fields are only checked and passed
// over, and a key matches a field's name as in encoding/json (exactly, or
// else ignoring case: "Choices" is choices). Decoding chunks was the
// largest part of the LLM client's CPU per call (every chunk also carries
// id, object, created, model and system_fingerprint, which encoding/json
// walked too); the gjson parser that replaced it still read each chunk
// twice, a validity pass and then a walk that parsed every nested value
// again for each level (5.5 % of the server's CPU in `load runs`).
//
// data is read in place: the stream decoder reuses it for the next event,
// so every string kept in c is a copy, and nothing else of data outlives
// the call. c.Choices may come with a backing array from an earlier chunk
// (decodeChatStream keeps it): what lies past its length is cleared
// first, so the chunk reads as if decoded into a fresh chatChunk, while
// within one chunk a repeated key decodes into what the earlier one left,
// as json.Unmarshal does.
func parseChatChunk(data []byte, c *chatChunk) error {
	clear(c.Choices[len(c.Choices):cap(c.Choices)])
	p := chunkParser{data: data}
	p.space()
	switch p.peek() {
	case '{':
		p.chunk(c)
	case 'n':
		p.null()
	default:
		p.mismatch("chunk", "an object")
	}
	if p.syntax == nil {
		p.space()
		if p.pos < len(p.data) {
			p.fail("after the top-level value")
		}
	}
	if p.syntax != nil {
		return p.syntax
	}
	return p.typed
}

// chunkParser reads one chunk. A syntax error stops the parse (syntax is
// set and every method returns at once); a type error is kept in typed and
// the value passed over, so that the rest is still checked.
type chunkParser struct {
	data   []byte
	pos    int
	depth  int
	syntax error
	typed  error
}

// maxDepth is encoding/json's limit on nested arrays and objects.
const maxDepth = 10000

func (p *chunkParser) fail(what string) {
	if p.syntax == nil {
		p.syntax = fmt.Errorf("invalid JSON at byte %d: %s", p.pos, what)
	}
}

func (p *chunkParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek is the next byte, 0 at the end.
func (p *chunkParser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

// mismatch records that field's value is not what it should be (the
// first such error is the one returned) and passes the value over.
func (p *chunkParser) mismatch(field, want string) {
	start := p.pos
	p.skip()
	if p.syntax == nil && p.typed == nil {
		raw := string(p.data[start:p.pos])
		if len(raw) > 40 {
			raw = raw[:40] + "…"
		}
		p.typed = fmt.Errorf("field %s: want %s, not %s", field, want, raw)
	}
}

// null reads the literal null.
func (p *chunkParser) null() { p.literal("null") }

func (p *chunkParser) literal(lit string) {
	if len(p.data)-p.pos >= len(lit) && string(p.data[p.pos:p.pos+len(lit)]) == lit {
		p.pos += len(lit)
		return
	}
	p.fail("want " + lit)
}

// object reads an object's keys one by one: call it with first true at
// the '{', then with false after each value; it returns the next key (in
// place in data, or unescaped) with its ':' read, or ok false after the
// closing '}' (or on a syntax error).
func (p *chunkParser) object(first bool) (key string, ok bool) {
	if p.syntax != nil {
		return "", false
	}
	if first {
		p.pos++ // '{'
		if p.depth++; p.depth > maxDepth {
			p.fail("nested too deep")
			return "", false
		}
		p.space()
		if p.peek() == '}' {
			p.pos++
			p.depth--
			return "", false
		}
	} else {
		p.space()
		switch p.peek() {
		case ',':
			p.pos++
			p.space()
		case '}':
			p.pos++
			p.depth--
			return "", false
		default:
			p.fail("want , or } after an object's value")
			return "", false
		}
	}
	if p.peek() != '"' {
		p.fail("want a key")
		return "", false
	}
	raw, escaped, ok := p.stringToken()
	if !ok {
		return "", false
	}
	if escaped {
		key = unquote(raw)
	} else {
		key = unsafe.String(unsafe.SliceData(raw), len(raw)) // matched, never kept
	}
	p.space()
	if p.peek() != ':' {
		p.fail("want : after a key")
		return "", false
	}
	p.pos++
	p.space()
	return key, true
}

// array is object's counterpart for arrays: ok is whether a value follows.
func (p *chunkParser) array(first bool) bool {
	if p.syntax != nil {
		return false
	}
	if first {
		p.pos++ // '['
		if p.depth++; p.depth > maxDepth {
			p.fail("nested too deep")
			return false
		}
		p.space()
		if p.peek() == ']' {
			p.pos++
			p.depth--
			return false
		}
		return true
	}
	p.space()
	switch p.peek() {
	case ',':
		p.pos++
		p.space()
		return true
	case ']':
		p.pos++
		p.depth--
		return false
	}
	p.fail("want , or ] after an array's value")
	return false
}

// skip reads any value, checking it.
func (p *chunkParser) skip() {
	switch p.peek() {
	case '{':
		for _, ok := p.object(true); ok; _, ok = p.object(false) {
			p.skip()
		}
	case '[':
		for ok := p.array(true); ok; ok = p.array(false) {
			p.skip()
		}
	case '"':
		p.stringToken()
	case 't':
		p.literal("true")
	case 'f':
		p.literal("false")
	case 'n':
		p.null()
	default:
		p.number()
	}
}

// number reads a number as JSON spells it and returns its text.
func (p *chunkParser) number() []byte {
	d, start := p.data, p.pos
	i := start
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i++; i < len(d) && d[i] >= '0' && d[i] <= '9'; i++ {
		}
	default:
		p.pos = i
		p.fail("want a value")
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			p.fail("want a digit after the decimal point")
			return nil
		}
		for ; i < len(d) && d[i] >= '0' && d[i] <= '9'; i++ {
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			p.fail("want a digit in the exponent")
			return nil
		}
		for ; i < len(d) && d[i] >= '0' && d[i] <= '9'; i++ {
		}
	}
	p.pos = i
	return d[start:i]
}

// stringToken reads a string literal and returns what is between its
// quotes, and whether it must go through unquote: it holds an escape, or
// bytes that are not valid UTF-8.
func (p *chunkParser) stringToken() (raw []byte, escaped, ok bool) {
	d := p.data
	start := p.pos + 1 // past '"'
	nonASCII := false
	for i := start; i < len(d); {
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			if nonASCII && !escaped {
				escaped = !utf8.Valid(d[start:i])
			}
			return d[start:i], escaped, true
		case c == '\\':
			escaped = true
			if i+1 >= len(d) {
				p.pos = i
				p.fail("unterminated string")
				return nil, false, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(d[i:]) < 0 {
					p.pos = i
					p.fail("want four hex digits after \\u")
					return nil, false, false
				}
				i += 6
			default:
				p.pos = i
				p.fail("invalid escape")
				return nil, false, false
			}
		case c < 0x20:
			p.pos = i
			p.fail("control character in a string")
			return nil, false, false
		default:
			if c >= utf8.RuneSelf {
				nonASCII = true
			}
			i++
		}
	}
	p.pos = len(d)
	p.fail("unterminated string")
	return nil, false, false
}

// str reads a string field into *dst (a copy); null leaves it as it was,
// as json.Unmarshal does.
func (p *chunkParser) str(field string, dst *string) {
	switch p.peek() {
	case '"':
		raw, escaped, ok := p.stringToken()
		if !ok {
			return
		}
		if escaped {
			*dst = unquote(raw)
		} else {
			*dst = string(raw)
		}
	case 'n':
		p.null()
	default:
		p.mismatch(field, "a string")
	}
}

// integer reads an integer field into *dst; null leaves it as it was.
// Like json.Unmarshal into an int64, it takes only a plain integer
// literal: a fraction, an exponent (1e0) or a number past int64 is an
// error.
func (p *chunkParser) integer(field string, dst *int64) { p.integerBits(field, dst, 64) }

// integerBits is integer for an integer of bits bits (an int's index is
// strconv.IntSize).
func (p *chunkParser) integerBits(field string, dst *int64, bits int) {
	switch c := p.peek(); {
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		num := p.number()
		if p.syntax != nil {
			return
		}
		n, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(num), len(num)), 10, bits)
		if err != nil {
			p.pos = start
			p.mismatch(field, "an integer")
			return
		}
		*dst = n
	case c == 'n':
		p.null()
	default:
		p.mismatch(field, "an integer")
	}
}

// open reads null (false: nothing to decode, the field keeps what it
// held, as with json.Unmarshal) or finds an object next (true); anything
// else is field's type error (false).
func (p *chunkParser) open(field string) bool {
	switch p.peek() {
	case '{':
		return true
	case 'n':
		p.null()
	default:
		p.mismatch(field, "an object")
	}
	return false
}

// decodeArray decodes an array (p at its '[') into s as json.Unmarshal
// decodes into a slice: element i into what s holds there (within its
// capacity), s cut to the array's length; an empty array is an empty
// slice.
func decodeArray[T any](p *chunkParser, s []T, elem func(*T)) []T {
	i := 0
	for ok := p.array(true); ok; ok = p.array(false) {
		if i >= len(s) {
			if i < cap(s) {
				s = s[:i+1]
			} else {
				var zero T
				s = append(s, zero)
			}
		}
		elem(&s[i])
		i++
	}
	if i == 0 {
		return []T{}
	}
	return s[:i]
}

func (p *chunkParser) chunk(c *chatChunk) {
	for key, ok := p.object(true); ok; key, ok = p.object(false) {
		switch name(key, "choices", "usage", "error") {
		case "choices":
			p.choices(c)
		case "usage":
			p.usage(c)
		case "error":
			start := p.pos
			p.skip()
			if p.syntax == nil {
				c.Error = append(c.Error[:0], p.data[start:p.pos]...)
			}
		default:
			p.skip()
		}
	}
}

// choices decodes into c.Choices (decodeArray); null makes it nil.
func (p *chunkParser) choices(c *chatChunk) {
	switch p.peek() {
	case 'n':
		p.null()
		c.Choices = nil
	case '[':
		c.Choices = decodeArray(p, c.Choices, p.choice)
	default:
		p.mismatch("choices", "an array")
	}
}

func (p *chunkParser) choice(ch *chatChoice) {
	if !p.open("choices[]") {
		return
	}
	for key, ok := p.object(true); ok; key, ok = p.object(false) {
		switch name(key, "finish_reason", "delta") {
		case "finish_reason":
			p.str("finish_reason", &ch.FinishReason)
		case "delta":
			p.delta(ch)
		default:
			p.skip()
		}
	}
}

func (p *chunkParser) delta(ch *chatChoice) {
	if !p.open("delta") {
		return
	}
	for key, ok := p.object(true); ok; key, ok = p.object(false) {
		switch name(key, "content", "tool_calls") {
		case "content":
			p.str("content", &ch.Delta.Content)
		case "tool_calls":
			p.toolCalls(ch)
		default:
			p.skip()
		}
	}
}

// toolCalls decodes into ch.Delta.ToolCalls as choices does into
// c.Choices.
func (p *chunkParser) toolCalls(ch *chatChoice) {
	switch p.peek() {
	case 'n':
		p.null()
		ch.Delta.ToolCalls = nil
	case '[':
		ch.Delta.ToolCalls = decodeArray(p, ch.Delta.ToolCalls, p.toolCall)
	default:
		p.mismatch("tool_calls", "an array")
	}
}

func (p *chunkParser) toolCall(tc *chatToolCallDelta) {
	if !p.open("tool_calls[]") {
		return
	}
	for key, ok := p.object(true); ok; key, ok = p.object(false) {
		switch name(key, "index", "id", "function") {
		case "index":
			n := int64(tc.Index)
			p.integerBits("index", &n, strconv.IntSize)
			tc.Index = int(n)
		case "id":
			p.str("id", &tc.ID)
		case "function":
			p.function(tc)
		default:
			p.skip()
		}
	}
}

func (p *chunkParser) function(tc *chatToolCallDelta) {
	if !p.open("function") {
		return
	}
	for key, ok := p.object(true); ok; key, ok = p.object(false) {
		switch name(key, "name", "arguments") {
		case "name":
			p.str("name", &tc.Function.Name)
		case "arguments":
			p.str("arguments", &tc.Function.Arguments)
		default:
			p.skip()
		}
	}
}

// usage decodes into c.Usage: null makes it nil, an object fills in the
// struct there is (a repeated key fills in the same one), or a new one.
func (p *chunkParser) usage(c *chatChunk) {
	if p.peek() == 'n' {
		p.null()
		c.Usage = nil
		return
	}
	if !p.open("usage") {
		return
	}
	if c.Usage == nil {
		c.Usage = &chatUsage{}
	}
	u := c.Usage
	for key, ok := p.object(true); ok; key, ok = p.object(false) {
		switch name(key, "prompt_tokens", "completion_tokens", "total_tokens") {
		case "prompt_tokens":
			p.integer("prompt_tokens", &u.PromptTokens)
		case "completion_tokens":
			p.integer("completion_tokens", &u.CompletionTokens)
		case "total_tokens":
			p.integer("total_tokens", &u.TotalTokens)
		default:
			p.skip()
		}
	}
}

// hex4 reads the four hex digits after a \u (b starts at the backslash),
// -1 if there are not four.
func hex4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// unquote decodes a string literal's contents (checked by stringToken)
// as encoding/json does: escapes, a surrogate pair as one character, a
// lone surrogate and each byte that is not part of valid UTF-8 as U+FFFD.
func unquote(raw []byte) string {
	var b strings.Builder
	b.Grow(len(raw) + 8)
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch raw[i+1] {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r := hex4(raw[i:])
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, hex4(raw[i:])); dec != unicode.ReplacementChar {
						i += 6
						b.WriteRune(dec)
						continue
					}
					r = unicode.ReplacementChar
				}
				b.WriteRune(r)
				continue
			default: // " \ /
				b.WriteByte(raw[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			b.WriteRune(r) // U+FFFD for a byte that is not UTF-8
			i += size
		}
	}
	return b.String()
}

// name returns the field of names that key stands for, "" for none: the
// one it equals, or else the first it equals ignoring case (Unicode
// simple folding), as encoding/json matches keys to a struct's fields.
func name(key string, names ...string) string {
	for _, n := range names {
		if key == n {
			return n
		}
	}
	// Folding keeps an ASCII key's length (only non-ASCII letters such as
	// the Kelvin sign fold to a letter of another length), so most keys
	// of other fields are passed over without EqualFold.
	ascii := true
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	for _, n := range names {
		if (!ascii || len(key) == len(n)) && strings.EqualFold(key, n) {
			return n
		}
	}
	return ""
}
