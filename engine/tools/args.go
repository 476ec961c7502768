package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// args is one call's arguments object, checked against the tool's schema:
// unknown fields and missing required ones are errors. Getters record the
// first bad field in err, so a tool reads all its fields and checks once.
type args struct {
	m   map[string]json.RawMessage
	err error
}

// parseArgs decodes raw against t's Parameters schema. Empty or null
// arguments are an empty object (a tool without required fields may be
// called so). A JSON string holding an object is accepted too: some models
// encode the arguments twice.
func parseArgs(t Tool, raw json.RawMessage) (*args, error) {
	data := bytes.TrimSpace(raw)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err == nil {
			data = bytes.TrimSpace([]byte(s))
		}
	}
	if len(data) == 0 || string(data) == "null" {
		data = []byte("{}")
	}
	if data[0] != '{' {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", snippet(data))
	}
	a := &args{}
	if err := json.Unmarshal(data, &a.m); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	schema := t.Parameters()
	props, _ := schema["properties"].(map[string]any)
	var unknown []string
	for k, v := range a.m {
		if _, ok := props[k]; !ok {
			unknown = append(unknown, k)
		}
		if string(bytes.TrimSpace(v)) == "null" {
			delete(a.m, k) // null is how many models say "not set"
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		known := make([]string, 0, len(props))
		for k := range props {
			known = append(known, k)
		}
		slices.Sort(known)
		return nil, fmt.Errorf("unknown field %q (fields: %s)", unknown[0], strings.Join(known, ", "))
	}
	req, _ := schema["required"].([]string)
	for _, k := range req {
		if _, ok := a.m[k]; !ok {
			return nil, fmt.Errorf("missing required field %q", k)
		}
	}
	return a, nil
}

// snippet quotes the start of a bad value for an error message.
func snippet(v []byte) string {
	s := string(bytes.TrimSpace(v))
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
}

func (a *args) fail(name, want string, v json.RawMessage) {
	if a.err == nil {
		a.err = fmt.Errorf("field %q: want %s, got %s", name, want, snippet(v))
	}
}

// has reports whether the field was given (and not null).
func (a *args) has(name string) bool {
	_, ok := a.m[name]
	return ok
}

// str is a string field ("" when absent).
func (a *args) str(name string) string {
	v, ok := a.m[name]
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		a.fail(name, "a string", v)
	}
	return s
}

// int is an integer field (0 when absent). A whole number written as a
// float (10.0) or as a string ("10") is accepted: models send both.
func (a *args) int(name string) int {
	v, ok := a.m[name]
	if !ok {
		return 0
	}
	text := string(bytes.TrimSpace(v))
	if strings.HasPrefix(text, `"`) {
		var s string
		if json.Unmarshal(v, &s) != nil {
			a.fail(name, "an integer", v)
			return 0
		}
		text = strings.TrimSpace(s)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		a.fail(name, "an integer", v)
		return 0
	}
	return int(f)
}

// bool is a boolean field (false when absent); "true" and "false" as
// strings are accepted.
func (a *args) bool(name string) bool {
	v, ok := a.m[name]
	if !ok {
		return false
	}
	switch strings.Trim(string(bytes.TrimSpace(v)), `"`) {
	case "true":
		return true
	case "false":
		return false
	}
	a.fail(name, "a boolean", v)
	return false
}

// strs is a list of strings; one string is a list of one.
func (a *args) strs(name string) []string {
	v, ok := a.m[name]
	if !ok {
		return nil
	}
	var l []string
	if err := json.Unmarshal(v, &l); err == nil {
		return l
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return []string{s}
	}
	a.fail(name, "a list of strings", v)
	return nil
}
