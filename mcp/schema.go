package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"
)

// MaxToolName is the longest tool name model APIs accept (OpenAI's and
// Anthropic's function names: ^[a-zA-Z0-9_-]{1,64}$).
const MaxToolName = 64

// QualifiedName is the name a model calls an MCP tool by, as Claude Code
// names them: mcp__<server>__<tool>, every character outside [A-Za-z0-9_-]
// replaced by '_'. A name that would pass MaxToolName is cut and ends in
// '_' and 8 hex digits of a hash of the tool's real name, so that names
// stay unique. (Qualify, in Tools, also gives that suffix to tools whose
// sanitized names collide.)
func QualifiedName(server, tool string) string {
	return qualify(server, tool, false)
}

func qualify(server, tool string, forceHash bool) string {
	q := "mcp__" + sanitize(server) + "__" + sanitize(tool)
	if len(q) <= MaxToolName && !forceHash {
		return q
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(q) > MaxToolName-len(suffix) {
		q = q[:MaxToolName-len(suffix)]
	}
	return q + suffix
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			b[i] = '_'
		}
	}
	return string(b)
}

// qualifyAll names the tools of one server: QualifiedName, except that
// every tool of a group whose names collide gets the hash suffix.
func qualifyAll(server string, names []string) []string {
	out := make([]string, len(names))
	count := map[string]int{}
	for i, n := range names {
		out[i] = qualify(server, n, false)
		count[out[i]]++
	}
	for i, n := range names {
		if count[out[i]] > 1 {
			out[i] = qualify(server, n, true)
		}
	}
	return out
}

// NormalizeSchema turns a tool's input schema (any JSON value a server
// sent) into one a model API accepts as function parameters: an object
// schema with properties. A missing or non-object schema becomes
// {"type": "object", "properties": {}}; a missing or non-object root type
// becomes "object" (MCP arguments are always an object); "$schema" is
// dropped (some providers refuse it); an array schema without "items"
// gets "items": {} (OpenAI refuses arrays without items), at any depth.
// The result is a fresh copy.
func NormalizeSchema(schema any) map[string]any {
	var m map[string]any
	switch s := schema.(type) {
	case map[string]any:
		m = deepCopy(s).(map[string]any)
	case json.RawMessage:
		_ = json.Unmarshal(s, &m)
	default:
		if b, err := json.Marshal(s); err == nil {
			_ = json.Unmarshal(b, &m)
		}
	}
	if m == nil {
		m = map[string]any{}
	}
	delete(m, "$schema")
	if t, ok := m["type"].(string); !ok || t != "object" {
		if types, ok := m["type"].([]any); !ok || !containsString(types, "object") {
			// Not an object schema: what it says of the value does not
			// apply to an arguments object, so only its description stays.
			keep := map[string]any{}
			if d, ok := m["description"].(string); ok {
				keep["description"] = d
			}
			if _, hasProps := m["properties"]; hasProps && m["type"] == nil {
				keep = m // an object schema that forgot its type
			}
			m = keep
		}
		m["type"] = "object"
	}
	if p, ok := m["properties"].(map[string]any); !ok || p == nil {
		m["properties"] = map[string]any{}
	}
	if r, ok := m["required"]; ok {
		if _, isList := r.([]any); !isList {
			delete(m, "required")
		}
	}
	fixArrays(m, 0)
	return m
}

func containsString(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// fixArrays gives every array schema in s, at any depth, an items schema.
func fixArrays(s map[string]any, depth int) {
	if depth > 64 {
		return
	}
	isArray := s["type"] == "array"
	if types, ok := s["type"].([]any); ok && containsString(types, "array") {
		isArray = true
	}
	if _, ok := s["items"]; isArray && !ok {
		s["items"] = map[string]any{}
	}
	for k, v := range s {
		switch k {
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
			if m, ok := v.(map[string]any); ok {
				for _, sub := range m {
					if sm, ok := sub.(map[string]any); ok {
						fixArrays(sm, depth+1)
					}
				}
			}
		case "items", "additionalProperties", "not", "if", "then", "else", "contains",
			"propertyNames", "additionalItems", "unevaluatedItems", "unevaluatedProperties",
			"anyOf", "oneOf", "allOf", "prefixItems":
			switch x := v.(type) {
			case map[string]any:
				fixArrays(x, depth+1)
			case []any:
				for _, sub := range x {
					if sm, ok := sub.(map[string]any); ok {
						fixArrays(sm, depth+1)
					}
				}
			}
		}
	}
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

// cutString returns s cut to at most n bytes, at a rune boundary.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
