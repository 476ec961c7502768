package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// parseChatChunk fills c from one streamed chat chunk as json.Unmarshal
// would, for the fields chatChunk names, without reflection: the fields
// are picked from the raw bytes (gjson) after one validity pass. Invalid
// JSON and a field of the wrong type are errors, as they are for
// json.Unmarshal; other fields are not looked at, and a key matches a
// field's name as in encoding/json (exactly, or else ignoring case:
// "Choices" is choices). It was the largest part
// of the LLM client's CPU per call: every chunk also carries id, object,
// created, model and system_fingerprint, which encoding/json walked too.
//
// data is read in place, not copied into a string first (gjson.ParseBytes
// does: about 250 bytes a chunk, 1.5 KB a short call): the stream decoder
// reuses data for the next event, so every string kept in c is a copy
// (str), and nothing else of data outlives the call.
func parseChatChunk(data []byte, c *chatChunk) error {
	if len(data) == 0 || !gjson.ValidBytes(data) {
		return errors.New("invalid JSON")
	}
	root := gjson.Parse(unsafe.String(&data[0], len(data)))
	switch {
	case root.Type == gjson.Null:
		return nil
	case !root.IsObject():
		return fmt.Errorf("a chunk must be an object, not %s", root.Raw)
	}
	var err error
	root.ForEach(func(key, v gjson.Result) bool {
		switch name(key.Str, "choices", "usage", "error") {
		case "choices":
			err = parseChoices(v, c)
		case "usage":
			err = parseUsage(v, c)
		case "error":
			c.Error = []byte(v.Raw)
		}
		return err == nil
	})
	return err
}

func parseChoices(v gjson.Result, c *chatChunk) error {
	switch {
	case v.Type == gjson.Null:
		c.Choices = nil
		return nil
	case !v.IsArray():
		return fieldErr("choices", "an array", v)
	}
	c.Choices = c.Choices[:0] // a repeated key replaces, as in json.Unmarshal
	var err error
	v.ForEach(func(_, ch gjson.Result) bool {
		var one chatChoice
		if err = parseChoice(ch, &one); err == nil {
			c.Choices = append(c.Choices, one)
		}
		return err == nil
	})
	return err
}

func parseChoice(ch gjson.Result, out *chatChoice) error {
	if ch.Type == gjson.Null {
		return nil
	}
	if !ch.IsObject() {
		return fieldErr("choices[]", "an object", ch)
	}
	var err error
	ch.ForEach(func(key, v gjson.Result) bool {
		switch name(key.Str, "finish_reason", "delta") {
		case "finish_reason":
			out.FinishReason, err = str("finish_reason", v)
		case "delta":
			err = parseDelta(v, out)
		}
		return err == nil
	})
	return err
}

func parseDelta(d gjson.Result, out *chatChoice) error {
	if d.Type == gjson.Null {
		return nil
	}
	if !d.IsObject() {
		return fieldErr("delta", "an object", d)
	}
	var err error
	d.ForEach(func(key, v gjson.Result) bool {
		switch name(key.Str, "content", "tool_calls") {
		case "content":
			out.Delta.Content, err = str("content", v)
		case "tool_calls":
			err = parseToolCalls(v, out)
		}
		return err == nil
	})
	return err
}

func parseToolCalls(v gjson.Result, out *chatChoice) error {
	switch {
	case v.Type == gjson.Null:
		out.Delta.ToolCalls = nil
		return nil
	case !v.IsArray():
		return fieldErr("tool_calls", "an array", v)
	}
	out.Delta.ToolCalls = out.Delta.ToolCalls[:0]
	var err error
	v.ForEach(func(_, tc gjson.Result) bool {
		var one chatToolCallDelta
		if tc.Type != gjson.Null && !tc.IsObject() {
			err = fieldErr("tool_calls[]", "an object", tc)
			return false
		}
		tc.ForEach(func(key, f gjson.Result) bool {
			switch name(key.Str, "index", "id", "function") {
			case "index":
				var n int64
				n, err = integer("index", f)
				one.Index = int(n)
			case "id":
				one.ID, err = str("id", f)
			case "function":
				switch {
				case f.Type == gjson.Null:
				case !f.IsObject():
					err = fieldErr("function", "an object", f)
				default:
					f.ForEach(func(k, x gjson.Result) bool {
						switch name(k.Str, "name", "arguments") {
						case "name":
							one.Function.Name, err = str("name", x)
						case "arguments":
							one.Function.Arguments, err = str("arguments", x)
						}
						return err == nil
					})
				}
			}
			return err == nil
		})
		if err == nil {
			out.Delta.ToolCalls = append(out.Delta.ToolCalls, one)
		}
		return err == nil
	})
	return err
}

func parseUsage(v gjson.Result, c *chatChunk) error {
	switch {
	case v.Type == gjson.Null:
		c.Usage = nil
		return nil
	case !v.IsObject():
		return fieldErr("usage", "an object", v)
	}
	// A repeated key fills in the same struct, as in json.Unmarshal.
	u := c.Usage
	if u == nil {
		u = &chatUsage{}
	}
	var err error
	v.ForEach(func(key, x gjson.Result) bool {
		switch name(key.Str, "prompt_tokens", "completion_tokens", "total_tokens") {
		case "prompt_tokens":
			u.PromptTokens, err = integer("prompt_tokens", x)
		case "completion_tokens":
			u.CompletionTokens, err = integer("completion_tokens", x)
		case "total_tokens":
			u.TotalTokens, err = integer("total_tokens", x)
		}
		return err == nil
	})
	c.Usage = u
	return err
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

// str reads a string field; null leaves it empty, as json.Unmarshal does.
// The string is a copy: v may point into the chunk's reused buffer.
func str(name string, v gjson.Result) (string, error) {
	switch v.Type {
	case gjson.String:
		if hasSurrogateEscape(v.Raw) {
			// gjson reads a lone or broken surrogate escape (\ud800\u0041)
			// differently from encoding/json; such strings are rare
			// enough to take the reference's path.
			var s string
			if err := json.Unmarshal([]byte(v.Raw), &s); err != nil {
				return "", fieldErr(name, "a string", v)
			}
			return s, nil
		}
		return validUTF8(v.Str), nil
	case gjson.Null:
		return "", nil
	}
	return "", fieldErr(name, "a string", v)
}

// integer reads an integer field; null is 0. Like json.Unmarshal into an
// int64, it takes only a plain integer literal: a fraction, an exponent
// (1e0) or a number past int64 is an error.
func integer(name string, v gjson.Result) (int64, error) {
	switch v.Type {
	case gjson.Null:
		return 0, nil
	case gjson.Number:
		if n, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, fieldErr(name, "an integer", v)
}

// hasSurrogateEscape reports whether raw, a JSON string literal, may hold
// a \u escape of a UTF-16 surrogate (D800 to DFFF). A false positive
// (an escaped backslash before "ud8") only takes the slower path.
func hasSurrogateEscape(raw string) bool {
	for {
		i := strings.Index(raw, `\u`)
		if i < 0 || i+3 >= len(raw) {
			return false
		}
		if c, d := raw[i+2], raw[i+3]; (c == 'd' || c == 'D') && strings.IndexByte("89abAB", d) >= 0 {
			return true
		}
		raw = raw[i+2:]
	}
}

// validUTF8 returns a copy of s with each byte that is not part of valid
// UTF-8 replaced by U+FFFD, as json.Unmarshal does (gjson passes a
// string's bytes through as they are): converting to runes reads each
// such byte as one U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return strings.Clone(s)
	}
	return string([]rune(s))
}

func fieldErr(name, want string, v gjson.Result) error {
	raw := v.Raw
	if len(raw) > 40 {
		raw = raw[:40] + "…"
	}
	return fmt.Errorf("field %s: want %s, not %s", name, want, raw)
}
