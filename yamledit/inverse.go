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

// ErrNoInverse is an edit whose undo cannot be written as edits: a
// deleted node's text (its fields, comments and place in the list) is not
// something addNode can bring back. Undo such an edit by writing the text
// from before it (the web editor's undo does that for every write).
var ErrNoInverse = errors.New("this edit cannot be undone with edits: write the text from before it instead")

// Inverse is the list of edits that undoes e on src: Apply(Apply(src, e),
// Inverse(src, e)) is src again. It is computed from src, the text before
// e, because an edit alone does not say what it replaced: addDependency
// on `depends_on: []` and on a node without depends_on both give
// `depends_on: [x]`, and only the text before tells whether the undo is
// to set `depends_on: []` again or to remove the field.
//
// For the edits of a person (one field, one dependency, a rename, a new
// node) the result is src byte for byte; where the text cannot be written
// back exactly from a JSON value (a comment inside a replaced value, a
// number spelled 0x10, a flow list with unusual spacing, a removed field
// that was not the last of its mapping) it is src by meaning. deleteNode
// has no inverse (ErrNoInverse). e must apply to src; Inverse returns the
// error Apply would.
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
	return before.inverse(e)
}

func (d *Doc) inverse(e Edit) ([]Edit, error) {
	switch e.Op {
	case OpSet, OpUnset:
		return d.inverseSet(e)
	case OpAddNode:
		return []Edit{{Op: OpDeleteNode, Node: e.Node}}, nil
	case OpDeleteNode:
		return nil, ErrNoInverse
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
	return nil, fmt.Errorf("inverse of op %q: unknown op", e.Op)
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
