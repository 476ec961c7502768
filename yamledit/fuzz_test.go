package yamledit

import (
	"bytes"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/yamlflow"
)

// FuzzNoOpEdit: any file that parses saves back byte for byte, with no
// edits and with every scalar field set to the value it already has.
// Seeds: testdata/fuzz/FuzzNoOpEdit and base.
func FuzzNoOpEdit(f *testing.F) {
	f.Add([]byte(base))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			return
		}
		out, err := Apply(data, nil)
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("no edits changed the file (%v)", err)
		}
		var edits []Edit
		for i := 0; i+1 < len(d.topMap().Content); i += 2 {
			k, v := d.topMap().Content[i], d.topMap().Content[i+1]
			if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" && k.Value != "nodes" && fieldPartRE.MatchString(k.Value) {
				edits = append(edits, Set("", k.Value, v.Value))
			}
		}
		if seq, err := d.nodesSeq(); err == nil {
			for _, item := range seq.Content {
				if item.Kind != yaml.MappingNode {
					continue
				}
				_, id := lookup(item, "id")
				if id == nil || id.Kind != yaml.ScalarNode || id.Value == "" || findNode(seq, id.Value) < 0 {
					continue
				}
				for i := 0; i+1 < len(item.Content); i += 2 {
					k, v := item.Content[i], item.Content[i+1]
					if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" && k.Value != "id" && fieldPartRE.MatchString(k.Value) {
						edits = append(edits, Set(id.Value, k.Value, v.Value))
					}
				}
			}
		}
		for _, e := range edits {
			out, err := Apply(data, []Edit{e})
			if err == nil && !bytes.Equal(out, data) {
				t.Fatalf("no-op %+v changed the file:\n%s", e, out)
			}
		}
	})
}

// FuzzEdit applies one edit to arbitrary text: never a panic, and a
// success is text that parses as the edit says (Apply checks) and loads.
func FuzzEdit(f *testing.F) {
	f.Add([]byte(base), uint8(0), "a", "bash", "echo x")
	f.Add([]byte(base), uint8(1), "b", "retry.max_attempts", "3")
	f.Add([]byte(base), uint8(2), "c", "", "x")
	f.Add([]byte(base), uint8(3), "c", "", "")
	f.Add([]byte(base), uint8(4), "b", "", "c")
	f.Add([]byte(base), uint8(5), "c", "", "a")
	f.Add([]byte(base), uint8(6), "a", "", "z")
	f.Add([]byte("name: x\ndescription: y\nnodes: []\n"), uint8(2), "", "", "n")
	f.Fuzz(func(t *testing.T, data []byte, op uint8, node, field, arg string) {
		var e Edit
		switch op % 8 {
		case 0:
			e = Set(node, field, arg)
		case 1:
			e = Set(node, field, len(arg))
		case 2:
			e = Edit{Op: OpAddNode, Node: arg, Kind: "bash", Value: []byte(`"echo"`)}
		case 3:
			e = Edit{Op: OpDeleteNode, Node: node}
		case 4:
			e = Edit{Op: OpAddDependency, Node: node, Dependency: arg}
		case 5:
			e = Edit{Op: OpRemoveDependency, Node: node, Dependency: arg}
		case 6:
			e = Edit{Op: OpRenameNode, Node: node, NewID: arg}
		case 7:
			e = Edit{Op: OpUnset, Node: node, Field: field}
		}
		out, err := Apply(data, []Edit{e})
		if err != nil {
			return
		}
		if _, err := decode(out); err != nil {
			t.Fatalf("edit %+v gave text that does not parse: %v\n%s", e, err, out)
		}
		// Edits never write comments: their number cannot grow.
		if !strings.Contains(arg, "#") && bytes.Count(out, []byte("#")) > bytes.Count(data, []byte("#")) {
			t.Fatalf("edit %+v added a '#':\n%s\n---\n%s", e, data, out)
		}
		_, _, _ = yamlflow.Parse("fuzz.yaml", out)
	})
}
