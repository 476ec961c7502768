package yamledit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// encode renders n with yaml.v3's encoder (indent 2), without comments
// (the text keeps those outside the replaced range) and without the final
// newline.
func encode(n *yaml.Node) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot write the value as YAML: %v", r)
		}
	}()
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(withoutComments(n)); err != nil {
		return "", fmt.Errorf("cannot write the value as YAML: %w", err)
	}
	if err := e.Close(); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// literalOK reports whether s can be written as a literal block scalar
// that reads back exactly.
func literalOK(s string) bool {
	if !strings.Contains(s, "\n") || strings.HasSuffix(s, "\n\n") || !utf8.ValidString(s) {
		return false
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if strings.HasSuffix(l, " ") || strings.HasSuffix(l, "\t") {
			return false
		}
	}
	if strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\n") {
		return false
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r == 0xFEFF || r == 0x85 || r == 0x2028 || r == 0x2029 {
			return false
		}
	}
	return true
}

// literal writes s as a literal block scalar: the header, then each line
// indented by indent spaces.
func literal(s string, indent int) string {
	var b strings.Builder
	b.WriteString("|")
	if !strings.HasSuffix(s, "\n") {
		b.WriteString("-")
	}
	pad := strings.Repeat(" ", indent)
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString("\n")
		if l != "" {
			b.WriteString(pad)
			b.WriteString(l)
		}
	}
	return b.String()
}

// renderScalar writes a scalar on one line (inline) or as a literal block
// whose lines are indented by indent spaces. like is the scalar it
// replaces (nil for a new one): its quoting style is kept when it fits.
func renderScalar(n *yaml.Node, indent int, like *yaml.Node) (string, error) {
	if n.ShortTag() == "!!str" && literalOK(n.Value) {
		return literal(n.Value, indent), nil
	}
	c := *n
	c.Style = 0
	if like != nil && n.ShortTag() == "!!str" && !strings.Contains(n.Value, "\n") {
		c.Style = like.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle)
	}
	out, err := encode(&c)
	if err != nil {
		return "", err
	}
	if strings.Contains(out, "\n") {
		c.Style = yaml.DoubleQuotedStyle // always one line
		return encode(&c)
	}
	return out, nil
}

// renderBlock writes a collection in block style, every line indented by
// indent spaces (the first one too).
func renderBlock(n *yaml.Node, indent int) (string, error) {
	out, err := encode(n)
	if err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", indent)
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n"), nil
}

// isBlockCollection reports whether n would be written in block style.
func isBlockCollection(n *yaml.Node) bool {
	return (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && len(n.Content) > 0 && n.Style&yaml.FlowStyle == 0
}

// renderAfterKey is what follows "key:" for value v of a key indented by
// keyIndent: " inline", " |\n  block lines" or "\n  block collection".
// like is the value it replaces, if any.
func renderAfterKey(v *yaml.Node, keyIndent, step int, like *yaml.Node) (string, error) {
	switch {
	case v.Kind == yaml.ScalarNode:
		s, err := renderScalar(v, keyIndent+step, like)
		return " " + s, err
	case isBlockCollection(v):
		s, err := renderBlock(v, keyIndent+step)
		return "\n" + s, err
	default:
		s, err := encode(v)
		if strings.Contains(s, "\n") {
			return "", errors.New("cannot write the value on one line")
		}
		return " " + s, err
	}
}

// ValueNode converts a JSON value to a YAML node, keeping the order of
// object keys. Strings with newlines become literal blocks.
func ValueNode(raw json.RawMessage) (*yaml.Node, error) {
	if !json.Valid(raw) {
		return nil, errors.New("value: not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := jsonNode(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("value: more than one JSON value")
	}
	return n, nil
}

func jsonNode(dec *json.Decoder, depth int) (*yaml.Node, error) {
	if depth > 32 {
		return nil, errors.New("value: nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	switch v := tok.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v)}, nil
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: v.String()}, nil
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: v.String()}, nil
	case string:
		return strNode(v), nil
	case json.Delim:
		switch v {
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for dec.More() {
				c, err := jsonNode(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, c)
			}
			_, err := dec.Token()
			if len(n.Content) == 0 || allScalars(n.Content) {
				n.Style = yaml.FlowStyle
			}
			return n, err
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("value: %w", err)
				}
				c, err := jsonNode(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, strNode(k.(string)), c)
			}
			_, err := dec.Token()
			if len(n.Content) == 0 {
				n.Style = yaml.FlowStyle
			}
			return n, err
		}
	}
	return nil, fmt.Errorf("value: unexpected %v", tok)
}

func allScalars(ns []*yaml.Node) bool {
	for _, n := range ns {
		if n.Kind != yaml.ScalarNode || strings.Contains(n.Value, "\n") {
			return false
		}
	}
	return true
}

func strNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// equalNode compares two trees by meaning: kinds, resolved tags, values
// and children, not positions, styles or comments.
func equalNode(a, b *yaml.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind || len(a.Content) != len(b.Content) {
		return false
	}
	switch a.Kind {
	case yaml.ScalarNode:
		if a.ShortTag() != b.ShortTag() || a.Value != b.Value {
			return false
		}
	case yaml.AliasNode:
		if a.Value != b.Value {
			return false
		}
	}
	for i := range a.Content {
		if !equalNode(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}
