package engine

import (
	"strconv"
	"unicode/utf8"
)

// jsonAppender is event data that writes its own JSON: byte for byte what
// json.Marshal writes for it, without reflection. Every step emits a
// step_start and a step_end, so their data is on the hot path of every
// node (TestEventJSONMatchesMarshal keeps the two equal).
type jsonAppender interface {
	appendJSON(b []byte) []byte
}

func (d *stepStartData) appendJSON(b []byte) []byte {
	b = append(b, '{')
	if d.Retry != "" {
		b = append(b, `"retry":`...)
		b = appendJSONString(b, d.Retry)
		b = append(b, ',')
	}
	if d.Reused {
		b = append(b, `"reused":true,`...)
	}
	b = append(b, `"type":`...)
	b = appendJSONString(b, d.Type)
	b = append(b, `,"visit":`...)
	b = strconv.AppendInt(b, int64(d.Visit), 10)
	return append(b, '}')
}

func (d *startPromptData) appendJSON(b []byte) []byte {
	b = append(b, `{"model":`...)
	b = appendJSONString(b, d.Model)
	b = append(b, `,"systemPrompt":`...)
	b = appendJSONString(b, d.SystemPrompt)
	return append(b, '}')
}

func (d *stepEndData) appendJSON(b []byte) []byte {
	b = append(b, '{')
	if d.CancelRun != "" {
		b = append(b, `"cancelRun":`...)
		b = appendJSONString(b, d.CancelRun)
		b = append(b, ',')
	}
	if d.Decided {
		b = append(b, `"decided":true,`...)
	}
	b = append(b, `"durationMs":`...)
	b = strconv.AppendInt(b, d.DurationMs, 10)
	if d.Handle != "" {
		b = append(b, `,"handle":`...)
		b = appendJSONString(b, d.Handle)
	}
	b = append(b, `,"output":`...)
	b = appendJSONString(b, d.Output)
	if d.Rejection != nil {
		b = append(b, `,"rejection":`...)
		b = appendJSONString(b, *d.Rejection)
	}
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(d.Status))
	b = append(b, `,"visit":`...)
	b = strconv.AppendInt(b, int64(d.Visit), 10)
	return append(b, '}')
}

// appendJSONString quotes s as encoding/json does (HTML-safe: <, > and &
// escaped; U+2028 and U+2029 escaped; invalid UTF-8 as U+FFFD).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
