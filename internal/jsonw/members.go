package jsonw

import "unicode/utf8"

// Members walks the members of the one JSON object that is b (white space
// around it allowed). For each it calls member with the key, which must
// be a PlainString, and where the value starts; member reads the value
// and returns where it ends. Members reports false when b is not such an
// object, a key needs decoding, or member returns false: the one-pass
// readers built on it then leave the input to encoding/json.
func Members(b []byte, member func(key []byte, i int) (end int, ok bool)) bool {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = SkipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return SkipSpace(b, i+1) == len(b)
	}
	for {
		key, next, ok := PlainString(b, i)
		if !ok {
			return false
		}
		if i = SkipSpace(b, next); i >= len(b) || b[i] != ':' {
			return false
		}
		if i, ok = member(key, SkipSpace(b, i+1)); !ok {
			return false
		}
		var closed bool
		if i, closed, ok = afterMember(b, i, '}'); !ok {
			return false
		}
		if closed {
			return SkipSpace(b, i) == len(b)
		}
	}
}

// PlainString reads the string at b[i] when it needs no decoding: no
// escapes, no control characters, valid UTF-8 (encoding/json turns
// invalid bytes into U+FFFD). s is its content, next is past its quote.
func PlainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s = b[i+1 : j]
			return s, j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, i, false
		}
	}
	return nil, i, false
}
