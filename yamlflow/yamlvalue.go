package yamlflow

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Tags yaml.v3 resolves plain scalars to.
const (
	tagNull  = "!!null"
	tagBool  = "!!bool"
	tagInt   = "!!int"
	tagFloat = "!!float"
	tagStr   = "!!str"
	tagMerge = "!!merge"
)

// deref follows aliases. Anchors cannot contain themselves in YAML, but the
// loop is bounded anyway.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// kv is one key/value pair of a mapping.
type kv struct {
	key  string
	line int // line of the key
	val  *yaml.Node
}

// pairs lists the pairs of mapping m in order, expanding merge keys (<<) and
// reporting duplicate and non-scalar keys. path prefixes field names in
// diagnostics ("" at the top of a node or file).
func (p *parser) pairs(m *yaml.Node, nodeID, path string) []kv {
	var out []kv
	seen := map[string]int{}
	p.collectPairs(m, nodeID, path, seen, &out, 0, false)
	return out
}

func (p *parser) collectPairs(m *yaml.Node, nodeID, path string, seen map[string]int, out *[]kv, depth int, merged bool) {
	if m == nil || m.Kind != yaml.MappingNode || depth > 16 {
		return
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		kd := deref(k)
		if kd == nil || kd.Kind != yaml.ScalarNode {
			p.errorf(k.Line, nodeID, path, CodeInvalidKey, "mapping keys must be plain strings")
			continue
		}
		if kd.Tag == tagMerge {
			merges = append(merges, v)
			continue
		}
		name := kd.Value
		if first, dup := seen[name]; dup {
			if !merged {
				p.errorf(k.Line, nodeID, join(path, name), CodeDuplicateKey, "duplicate key (first at line %d)", first)
			}
			continue
		}
		seen[name] = k.Line
		*out = append(*out, kv{key: name, line: k.Line, val: v})
	}
	// Merged keys come after explicit ones so explicit keys win, as YAML says.
	for _, mv := range merges {
		mv = deref(mv)
		if mv == nil {
			continue
		}
		switch mv.Kind {
		case yaml.MappingNode:
			p.collectPairs(mv, nodeID, path, seen, out, depth+1, true)
		case yaml.SequenceNode:
			for _, item := range mv.Content {
				p.collectPairs(deref(item), nodeID, path, seen, out, depth+1, true)
			}
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == tagNull)
}

// str reads a text field. Any scalar is accepted as its literal text (so
// `until: 42` means "42"); null is "". ok is false (and an error reported)
// for sequences and mappings.
func (p *parser) str(f field, v *yaml.Node) (string, bool) {
	v = deref(v)
	if v == nil {
		return "", true
	}
	if v.Kind != yaml.ScalarNode {
		p.errorf(f.line, f.node, f.name, CodeInvalidType, "must be a string, not a %s", kindName(v))
		return "", false
	}
	if v.Tag == tagNull {
		return "", true
	}
	return v.Value, true
}

// boolean reads a true/false field; null leaves def.
func (p *parser) boolean(f field, v *yaml.Node, def bool) bool {
	v = deref(v)
	if v == nil || (v.Kind == yaml.ScalarNode && v.Tag == tagNull) {
		return def
	}
	if v.Kind == yaml.ScalarNode && v.Tag == tagBool {
		var b bool
		if err := v.Decode(&b); err == nil {
			return b
		}
	}
	p.errorf(f.line, f.node, f.name, CodeInvalidType, "must be true or false, not %s", describe(v))
	return def
}

// integer reads a whole-number field. present is false for null.
func (p *parser) integer(f field, v *yaml.Node) (n int, present, ok bool) {
	v = deref(v)
	if v == nil || (v.Kind == yaml.ScalarNode && v.Tag == tagNull) {
		return 0, false, true
	}
	if v.Kind == yaml.ScalarNode {
		switch v.Tag {
		case tagInt:
			var i int64
			if err := v.Decode(&i); err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
				return int(i), true, true
			}
			p.errorf(f.line, f.node, f.name, CodeInvalidValue, "number %s is out of range", v.Value)
			return 0, true, false
		case tagFloat:
			var x float64
			if err := v.Decode(&x); err == nil && x == math.Trunc(x) && x >= math.MinInt32 && x <= math.MaxInt32 {
				return int(x), true, true
			}
		}
	}
	p.errorf(f.line, f.node, f.name, CodeInvalidType, "must be a whole number, not %s", describe(v))
	return 0, true, false
}

// strList reads a list of strings.
func (p *parser) strList(f field, v *yaml.Node) ([]string, []int, bool) {
	v = deref(v)
	if v == nil || (v.Kind == yaml.ScalarNode && v.Tag == tagNull) {
		return nil, nil, true
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(f.line, f.node, f.name, CodeInvalidType, "must be a list (e.g. [a, b]), not %s", describe(v))
		return nil, nil, false
	}
	out := make([]string, 0, len(v.Content))
	lines := make([]int, 0, len(v.Content))
	ok := true
	for i, item := range v.Content {
		it := deref(item)
		if it == nil || it.Kind != yaml.ScalarNode || it.Tag == tagNull {
			p.errorf(item.Line, f.node, f.name+"["+strconv.Itoa(i)+"]", CodeInvalidType, "must be a string, not %s", describe(it))
			ok = false
			continue
		}
		out = append(out, it.Value)
		lines = append(lines, item.Line)
	}
	return out, lines, ok
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	}
	return "value"
}

// describe names a value for messages: `"yes" (a string)`, `a list`.
func describe(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		switch n.Tag {
		case tagStr:
			return strconv.Quote(v) + " (a string)"
		case tagNull:
			return "null"
		default:
			return v
		}
	}
	return "a value"
}

var errValueTooBig = errors.New("value too large or too deeply nested (alias expansion?)")

// toValue converts a YAML value to plain Go data in the JSON shape
// (map[string]any, []any, string, int64, float64, bool, nil). budget bounds
// the work so aliases cannot blow up (billion laughs).
func toValue(n *yaml.Node, budget *int, depth int) (any, error) {
	n = deref(n)
	*budget--
	if n == nil {
		return nil, nil
	}
	if *budget < 0 || depth > maxValueDepth {
		return nil, errValueTooBig
	}
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case tagNull:
			return nil, nil
		case tagBool:
			var b bool
			if n.Decode(&b) == nil {
				return b, nil
			}
		case tagInt:
			var i int64
			if n.Decode(&i) == nil {
				return i, nil
			}
			var x float64
			if n.Decode(&x) == nil {
				return x, nil
			}
		case tagFloat:
			var x float64
			if n.Decode(&x) == nil {
				return x, nil
			}
		}
		return n.Value, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := toValue(c, budget, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		if err := mergeInto(out, n, budget, depth); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, nil
}

func mergeInto(out map[string]any, n *yaml.Node, budget *int, depth int) error {
	if depth > maxValueDepth {
		return errValueTooBig
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k == nil {
			continue
		}
		if k.Kind == yaml.ScalarNode && k.Tag == tagMerge {
			merges = append(merges, n.Content[i+1])
			continue
		}
		key := k.Value
		if k.Kind != yaml.ScalarNode {
			key = strings.TrimSpace(kindName(k))
		}
		if _, dup := out[key]; dup {
			continue
		}
		v, err := toValue(n.Content[i+1], budget, depth+1)
		if err != nil {
			return err
		}
		out[key] = v
	}
	for _, m := range merges {
		m = deref(m)
		if m == nil {
			continue
		}
		*budget--
		if *budget < 0 {
			return errValueTooBig
		}
		switch m.Kind {
		case yaml.MappingNode:
			if err := mergeInto(out, m, budget, depth+1); err != nil {
				return err
			}
		case yaml.SequenceNode:
			for _, it := range m.Content {
				if it = deref(it); it != nil && it.Kind == yaml.MappingNode {
					if err := mergeInto(out, it, budget, depth+1); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
