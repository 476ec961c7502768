package yamledit

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Inverse is the list of edits that undoes e on src: Apply(Apply(src, e),
// Inverse(src, e)) is src again, byte for byte. It is computed from src,
// the text before e, because an edit alone does not say what it replaced:
// addDependency on `depends_on: []` and on a node without depends_on both
// give `depends_on: [x]`, and only the text before tells whether the undo
// is to set `depends_on: []` again or to remove the field.
//
// The undo is a structured edit (set the old value back, remove the
// dependency, rename back, delete the added node) when that gives src
// back exactly: such an edit names a node and a field, not lines, so it
// still applies after other edits moved the lines. Otherwise (a deleted
// node; a value, comment, quoting or blank line that no edit's JSON value
// can write back; a removed first field) it is restoreLines edits
// carrying the exact lines from src, one per run of changed lines. e must apply to src; Inverse returns
// the error Apply would.
func Inverse(src []byte, e Edit) ([]Edit, error) {
	out, err := Apply(src, []Edit{e})
	if err != nil {
		return nil, err
	}
	if string(out) == string(src) {
		return nil, nil // a no-op
	}
	// Parsed again: applying changes the tree it parsed.
	before, err := Parse(src)
	if err != nil {
		return nil, err
	}
	if inv, err := before.inverse(e); err == nil && len(inv) > 0 {
		if back, err := Apply(out, inv); err == nil && string(back) == string(src) {
			return inv, nil
		}
	}
	return restoreEdits(out, src)
}

func (d *Doc) inverse(e Edit) ([]Edit, error) {
	switch e.Op {
	case OpSet, OpUnset:
		return d.inverseSet(e)
	case OpAddNode:
		return []Edit{{Op: OpDeleteNode, Node: e.Node}}, nil
	case OpDeleteNode, OpRestoreLines:
		return nil, nil // no structured undo: Inverse restores the lines
	case OpAddDependency:
		m, _, _, err := d.target(e.Node)
		if err != nil {
			return nil, err
		}
		_, deps := lookup(m, "depends_on")
		switch {
		case deps == nil:
			// addDependency wrote `depends_on: [x]`; removing the last
			// entry removes the field.
			return []Edit{{Op: OpRemoveDependency, Node: e.Node, Dependency: e.Dependency}}, nil
		case deps.Kind == yaml.SequenceNode && len(deps.Content) > 0:
			return []Edit{{Op: OpRemoveDependency, Node: e.Node, Dependency: e.Dependency}}, nil
		}
		// `depends_on: []` or `depends_on:` (null): set it back.
		return d.restoreField(e.Node, "depends_on", deps)
	case OpRemoveDependency:
		m, _, _, err := d.target(e.Node)
		if err != nil {
			return nil, err
		}
		_, deps := lookup(m, "depends_on")
		j := -1
		for k, c := range deps.Content {
			if c.Kind == yaml.ScalarNode && strings.TrimSpace(c.Value) == e.Dependency {
				j = k
				break
			}
		}
		if j == len(deps.Content)-1 && (len(deps.Content) > 1 || d.dependsOnAfterID(m)) {
			// The last entry: addDependency appends it again (or, for
			// the only one, writes `depends_on: [x]` after the id).
			return []Edit{{Op: OpAddDependency, Node: e.Node, Dependency: e.Dependency}}, nil
		}
		inv, err := d.restoreField(e.Node, "depends_on", deps)
		if len(deps.Content) == 1 && err == nil {
			inv[0].After = keyBefore(m, "depends_on") // the field was removed
		}
		return inv, err
	case OpRenameNode:
		return []Edit{{Op: OpRenameNode, Node: e.NewID, NewID: e.Node}}, nil
	}
	return nil, nil
}

// dependsOnAfterID: m's depends_on is a one-line flow list right after
// its id (where addDependency writes a new one).
func (d *Doc) dependsOnAfterID(m *yaml.Node) bool {
	ii, _ := lookup(m, "id")
	di, deps := lookup(m, "depends_on")
	return ii >= 0 && di == ii+2 && deps.Style&yaml.FlowStyle != 0
}

// inverseSet undoes set/unset of e.Field: the old value set again, or the
// field (or the outermost mapping set created around it) removed.
func (d *Doc) inverseSet(e Edit) ([]Edit, error) {
	m, _, _, err := d.target(e.Node)
	if err != nil {
		return nil, err
	}
	path := strings.Split(e.Field, ".")
	for i, part := range path {
		_, v := lookup(m, part)
		if v == nil {
			// Absent from here down: set created it.
			return []Edit{{Op: OpUnset, Node: e.Node, Field: strings.Join(path[:i+1], ".")}}, nil
		}
		if i == len(path)-1 {
			inv, err := d.restoreField(e.Node, e.Field, v)
			if err == nil && (e.Op == OpUnset || string(e.Value) == "null") {
				// Removed: it goes back after the key it followed.
				inv[0].After = keyBefore(m, part)
			}
			return inv, err
		}
		m = v
	}
	return nil, nil
}

// keyBefore is the key before key in mapping m ("" for the first).
func keyBefore(m *yaml.Node, key string) string {
	if i, _ := lookup(m, key); i >= 2 {
		return m.Content[i-2].Value
	}
	return ""
}

// restoreField is the edit setting field of node back to old.
func (d *Doc) restoreField(node, field string, old *yaml.Node) ([]Edit, error) {
	raw, err := valueJSON(old)
	if err != nil {
		return nil, fmt.Errorf("inverse: field %q (line %d): %w", field, old.Line, err)
	}
	if string(raw) == "null" {
		// set null removes a field: the undo of replacing `key:` (null)
		// cannot write `key:` back; removing it means the same.
		return []Edit{{Op: OpUnset, Node: node, Field: field}}, nil
	}
	return []Edit{{Op: OpSet, Node: node, Field: field, Value: raw}}, nil
}

// valueJSON is the JSON value of a YAML node, object keys in their order.
func valueJSON(n *yaml.Node) (json.RawMessage, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return nil, errors.New("an alias has no JSON value to write back")
	case yaml.MappingNode:
		var b strings.Builder
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := json.Marshal(n.Content[i].Value)
			if err != nil {
				return nil, err
			}
			v, err := valueJSON(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(k)
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteByte('}')
		return json.RawMessage(b.String()), nil
	case yaml.SequenceNode:
		var b strings.Builder
		b.WriteByte('[')
		for i, c := range n.Content {
			v, err := valueJSON(c)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(v)
		}
		b.WriteByte(']')
		return json.RawMessage(b.String()), nil
	}
	switch n.ShortTag() {
	case "!!null":
		return json.RawMessage("null"), nil
	case "!!str":
		return json.Marshal(n.Value)
	case "!!int":
		// JSON spells an int one way; YAML also as 0x1F, 0o17, 1_000.
		if _, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
			return json.RawMessage(n.Value), nil
		}
	case "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && json.Valid([]byte(n.Value)) {
			return json.RawMessage(n.Value), nil
		}
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s has no JSON value: %w", n.Value, err)
	}
	return raw, nil
}
