package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Variables a prompt can name. Substitution is one left-to-right pass, so a
// substituted value is never scanned again: an output that contains
// "$ARGUMENTS" stays literal.
const (
	varPreviousOutput = "{{PREVIOUS_OUTPUT}}"
)

// VarSource resolves the variables of one node execution.
type VarSource interface {
	// Var returns a named variable ($ARGUMENTS -> "ARGUMENTS"); ok false if unknown.
	Var(name string) (value string, ok bool, err error)
	// NodeOutput returns a node's output; ok false for an unknown node.
	NodeOutput(nodeID string) (value string, ok bool)
	// NodeFieldAllowed may reject a field reference before the output is
	// parsed (YAML nodes with output_format); nil means any field.
	NodeFieldAllowed(nodeID, field string) error
}

// Quoter transforms substituted node outputs (bash quoting); nil keeps them raw.
type Quoter func(string) string

// SubstWarning reports a reference that resolved to "" with a warning.
type SubstWarning struct{ Message string }

// Substitute replaces {{PREVIOUS_OUTPUT}}, $NAME variables and
// $<node>.output[.<field>] references in s. quote, when set, is applied to
// every substituted node output (not to named variables).
func Substitute(s, previous string, src VarSource, quote Quoter) (string, []SubstWarning, error) {
	if !strings.ContainsAny(s, "${") {
		return s, nil, nil
	}
	var (
		b     strings.Builder
		warns []SubstWarning
	)
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], varPreviousOutput) {
			b.WriteString(previous)
			i += len(varPreviousOutput)
			continue
		}
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			i++
			continue
		}
		name := scanIdent(s[i+1:])
		if name == "" {
			b.WriteByte(c)
			i++
			continue
		}
		end := i + 1 + len(name)
		// $<node>.output or $<node>.output.<field>
		if next := at(s, end+len(".output")); strings.HasPrefix(s[end:], ".output") && (next == '-' || !isIdentByte(next)) {
			end2 := end + len(".output")
			field := ""
			if at(s, end2) == '.' {
				if f := scanField(s[end2+1:]); f != "" {
					field = f
					end2 += 1 + len(f)
				}
			}
			val, warn, err := nodeRef(src, name, field)
			if err != nil {
				return "", warns, err
			}
			if warn != "" {
				warns = append(warns, SubstWarning{warn})
			}
			if quote != nil {
				val = quote(val)
			}
			b.WriteString(val)
			i = end2
			continue
		}
		if v, ok, err := src.Var(name); err != nil {
			return "", warns, err
		} else if ok {
			b.WriteString(v)
			i = end
			continue
		}
		b.WriteString(s[i:end]) // not ours: leave $HOME and friends alone
		i = end
	}
	return b.String(), warns, nil
}

func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// scanIdent reads a node id or variable name: letters, digits, _ and -.
func scanIdent(s string) string {
	i := 0
	for i < len(s) && isIdentByte(s[i]) {
		i++
	}
	// A trailing '-' is punctuation, not part of a name ("$a.output--").
	for i > 0 && s[i-1] == '-' {
		i--
	}
	return s[:i]
}

// scanField reads a JSON field name: it must start with a letter or _.
func scanField(s string) string {
	if s == "" || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')) {
		return ""
	}
	i := 0
	for i < len(s) && (s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')) {
		i++
	}
	return s[:i]
}

// errFieldNotFound: a JSON output has no such top-level field.
var errFieldNotFound = errors.New("field not found")

// strictFields is a VarSource on which a missing field is an error unless
// FieldDeclared (YAML workflows); on others it substitutes "".
type strictFields interface {
	FieldDeclared(nodeID, field string) bool
}

// FieldError is a $node.output.field reference that cannot be resolved.
type FieldError struct {
	NodeID, Field, Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("$%s.output.%s: %s", e.NodeID, e.Field, e.Reason)
}

func nodeRef(src VarSource, id, field string) (val, warn string, err error) {
	out, ok := src.NodeOutput(id)
	if !ok {
		return "", fmt.Sprintf("$%s.output: no node %q in this workflow; substituted \"\"", id, id), nil
	}
	if field == "" {
		return out, "", nil
	}
	if err := src.NodeFieldAllowed(id, field); err != nil {
		return "", "", err
	}
	v, err := JSONField(out, field)
	if errors.Is(err, errFieldNotFound) {
		// YAML workflows follow Archon: a missing field fails the consumer,
		// unless the producer's output_format declares it (optional).
		if st, ok := src.(strictFields); !ok || st.FieldDeclared(id, field) {
			return "", "", nil
		}
		return "", "", &FieldError{NodeID: id, Field: field,
			Reason: fmt.Sprintf("field not found: the output of node %q has no field %q", id, field)}
	}
	if err != nil {
		return "", "", &FieldError{NodeID: id, Field: field, Reason: err.Error()}
	}
	return v, "", nil
}

// JSONField extracts a top-level field of a JSON object output (Archon's
// rules): strings raw, null as "null", numbers and booleans as written,
// arrays and objects as compact JSON (as `when` compares them). A missing
// field is an error: a consumer must not run on a silently empty value.
func JSONField(out, field string) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(stripFence(out))), &obj); err != nil || obj == nil {
		return "", fmt.Errorf("output is not a JSON object")
	}
	raw, ok := obj[field]
	if !ok {
		return "", fmt.Errorf("%w: the output has no field %q", errFieldNotFound, field)
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return "null", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	if len(raw) > 0 && (raw[0] == '{' || raw[0] == '[') {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			return b.String(), nil
		}
	}
	return string(raw), nil
}

// stripFence returns the JSON inside a ```json ... ``` (or ```) fence that
// models like to add, wherever the fence sits among prose. Text that is
// JSON already, or has no complete fence, is returned as it is.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if t == "" || ((t[0] == '{' || t[0] == '[') && json.Valid([]byte(t))) {
		return s
	}
	open := strings.Index(t, "```")
	if open < 0 {
		return s
	}
	body := t[open+3:]
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return s
	}
	if lang := strings.TrimSpace(body[:nl]); lang != "" && strings.ContainsAny(lang, " {[") {
		return s // not a fence opening: text follows the backticks
	}
	body = body[nl+1:]
	end := strings.Index(body, "```")
	if end < 0 {
		return s
	}
	return strings.TrimSpace(body[:end])
}

// execVars resolves variables against a running node.
type execVars struct {
	x *Exec
}

func (v execVars) Var(name string) (string, bool, error) {
	switch name {
	case "ARGUMENTS":
		return v.x.RunInput(), true, nil
	case "WORKFLOW_ID":
		return v.x.RunID(), true, nil
	case "REJECTION_REASON":
		return v.x.Rejection, true, nil
	case "ARTIFACTS_DIR":
		d, err := v.x.ArtifactsDir()
		return d, err == nil, err
	}
	return "", false, nil
}

func (v execVars) NodeOutput(id string) (string, bool) {
	out, _, ok := v.x.Output(id)
	return out, ok
}

func (v execVars) NodeFieldAllowed(string, string) error { return nil }

// quoteShell makes s one single-quoted shell word.
func quoteShell(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
