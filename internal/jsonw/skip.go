package jsonw

// maxDepth is encoding/json's nesting limit: deeper input is invalid.
const maxDepth = 10000

// SkipValue returns where the JSON value that starts at b[i] (after any
// white space) ends, and whether it is valid as encoding/json judges: the
// same grammar, strings of any bytes but control characters (UTF-8 is not
// checked, as the scanner does not), at most 10,000 levels of nesting. It
// reads each byte once, where json.Unmarshal's validation and decoding
// each scan the whole input.
func SkipValue(b []byte, i int) (end int, ok bool) {
	return skipValue(b, SkipSpace(b, i), 0)
}

// SkipSpace returns where the JSON white space at b[i] ends.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{':
		if depth++; depth > maxDepth {
			return i, false
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = skipString(b, i); !ok {
				return i, false
			}
			if i = SkipSpace(b, i); i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = skipValue(b, SkipSpace(b, i+1), depth); !ok {
				return i, false
			}
			var closed bool
			if i, closed, ok = afterMember(b, i, '}'); closed || !ok {
				return i, ok
			}
		}
	case c == '[':
		if depth++; depth > maxDepth {
			return i, false
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok, closed bool
			if i, ok = skipValue(b, i, depth); !ok {
				return i, false
			}
			if i, closed, ok = afterMember(b, i, ']'); closed || !ok {
				return i, ok
			}
		}
	case c == 't':
		return skipWord(b, i, "true")
	case c == 'f':
		return skipWord(b, i, "false")
	case c == 'n':
		return skipWord(b, i, "null")
	case c == '-' || ('0' <= c && c <= '9'):
		return skipNumber(b, i)
	}
	return i, false
}

// afterMember reads what follows a member of an object or an array: a
// comma (next is the next member's start) or the closing byte (closed,
// next is past it).
func afterMember(b []byte, i int, close byte) (next int, closed, ok bool) {
	if i = SkipSpace(b, i); i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return SkipSpace(b, i+1), false, true
	case close:
		return i + 1, true, true
	}
	return i, false, false
}

func skipWord(b []byte, i int, w string) (int, bool) {
	if len(b)-i < len(w) || string(b[i:i+len(w)]) != w {
		return i, false
	}
	return i + len(w), true
}

// skipString skips the string that starts at b[i] ('"').
func skipString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i++; i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func skipNumber(b []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(i + 1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}
