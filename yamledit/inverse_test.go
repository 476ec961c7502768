package yamledit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/yamlflow"
)

// TestInverseDependsOnEmpty is the reported bug: a dependency added to a
// node with an explicit `depends_on: []` and then removed lost the
// `depends_on: []` line. removeDependency cannot know: `depends_on: [x]`
// is what addDependency writes both on `depends_on: []` and on a node
// without depends_on, so the undo is computed from the text before
// (Inverse): set `depends_on: []` back in one case, remove the entry
// (and the field) in the other. Both give the file back byte for byte.
func TestInverseDependsOnEmpty(t *testing.T) {
	const explicit = "name: w\ndescription: d\nnodes:\n  - id: a\n    bash: echo a\n  - id: b\n    depends_on: []\n    bash: echo b\n"
	const absent = "name: w\ndescription: d\nnodes:\n  - id: a\n    bash: echo a\n  - id: b\n    bash: echo b\n"
	const null = "name: w\ndescription: d\nnodes:\n  - id: a\n    bash: echo a\n  - id: b\n    bash: echo b\n    depends_on: []  # none yet\n"
	add := Edit{Op: OpAddDependency, Node: "b", Dependency: "a"}
	for _, tc := range []struct {
		name, src, added string
		undo             []Edit
	}{
		{"explicit empty list", explicit, "    depends_on: [a]\n", []Edit{Set("b", "depends_on", []string{})}},
		{"no depends_on", absent, "  - id: b\n    depends_on: [a]\n", []Edit{{Op: OpRemoveDependency, Node: "b", Dependency: "a"}}},
		{"empty list with a comment", null, "    depends_on: [a]  # none yet\n", []Edit{Set("b", "depends_on", []string{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Apply([]byte(tc.src), []Edit{add})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tc.added) {
				t.Fatalf("add gave:\n%s", out)
			}
			inv, err := Inverse([]byte(tc.src), add)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(jsonOf(t, inv), jsonOf(t, tc.undo)) {
				t.Errorf("inverse = %s, want %s", jsonOf(t, inv), jsonOf(t, tc.undo))
			}
			back, err := Apply(out, inv)
			if err != nil {
				t.Fatal(err)
			}
			if string(back) != tc.src {
				t.Fatalf("add then its inverse gave:\n%s\nwant:\n%s", back, tc.src)
			}
		})
	}
	// The plain removeDependency of `depends_on: [a]` removes the field:
	// the same meaning as `depends_on: []`, one line fewer.
	out, _ := Apply([]byte(explicit), []Edit{add, {Op: OpRemoveDependency, Node: "b", Dependency: "a"}})
	if string(out) != absent {
		t.Fatalf("add then removeDependency gave:\n%s", out)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	return fmt.Sprintf("%+v", v)
}

// inverseFile is one file of the inverse property test.
type inverseFile struct {
	name string
	src  []byte
}

// inverseFiles: the package's samples, the fuzz seeds of testdata and
// every workflow of Archon's (both snapshots of the shared fixtures).
func inverseFiles(t *testing.T) []inverseFile {
	files := []inverseFile{{"base", []byte(base)}}
	seeds, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "*", "*"))
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if src, ok := fuzzSeedBytes(b); ok {
			files = append(files, inverseFile{p, src})
		}
	}
	shared := sharedDir(t)
	for _, snap := range []string{"archon", "archon-current"} {
		root := filepath.Join(shared, "fixtures", snap, "workflows")
		var paths []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && yamlflow.IsYAMLFile(p) {
				paths = append(paths, p)
			}
			return nil
		})
		sort.Strings(paths)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, p)
			files = append(files, inverseFile{snap + "/" + rel, b})
		}
	}
	return files
}

// fuzzSeedBytes is the first []byte argument of a Go fuzz corpus file.
func fuzzSeedBytes(b []byte) ([]byte, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		l := sc.Text()
		if rest, ok := strings.CutPrefix(l, "[]byte("); ok && strings.HasSuffix(rest, ")") {
			s, err := strconv.Unquote(strings.TrimSuffix(rest, ")"))
			return []byte(s), err == nil
		}
	}
	return nil, false
}

// candidateEdits is every edit the test tries on a file: each scalar
// field of each node (and of the top level) changed and removed, a new
// field and a new nested field, each dependency removed, a dependency
// added from each node to its neighbour, each node renamed and deleted, a
// node added.
func candidateEdits(d *Doc) []Edit {
	var edits []Edit
	changed := func(v *yaml.Node) any {
		switch v.ShortTag() {
		case "!!int":
			n, _ := strconv.Atoi(v.Value)
			return n + 1
		case "!!bool":
			return v.Value != "true"
		case "!!str":
			if strings.Contains(v.Value, "\n") {
				return v.Value + "one more line\n"
			}
			return v.Value + " changed"
		}
		return "changed"
	}
	top := d.topMap()
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i].Value, top.Content[i+1]
		if k == "nodes" || !fieldPartRE.MatchString(k) || v.Kind != yaml.ScalarNode {
			continue
		}
		edits = append(edits, Set("", k, changed(v)), Edit{Op: OpUnset, Field: k})
	}
	edits = append(edits, Set("", "model", "inverse-model"))
	seq, err := d.nodesSeq()
	if err != nil {
		return edits
	}
	var ids []string
	for _, item := range seq.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		if _, id := lookup(item, "id"); id != nil && id.Kind == yaml.ScalarNode && nodeIDRE.MatchString(id.Value) {
			ids = append(ids, id.Value)
		}
	}
	for n, item := range seq.Content {
		if item.Kind != yaml.MappingNode || n >= len(ids) {
			continue
		}
		_, idn := lookup(item, "id")
		if idn == nil {
			continue
		}
		id := idn.Value
		for i := 0; i+1 < len(item.Content); i += 2 {
			k, v := item.Content[i].Value, item.Content[i+1]
			if k == "id" || !fieldPartRE.MatchString(k) {
				continue
			}
			if v.Kind == yaml.ScalarNode {
				edits = append(edits, Set(id, k, changed(v)))
			}
			edits = append(edits, Edit{Op: OpUnset, Node: id, Field: k})
			if k == "depends_on" && v.Kind == yaml.SequenceNode {
				for _, dep := range v.Content {
					edits = append(edits, Edit{Op: OpRemoveDependency, Node: id, Dependency: dep.Value})
				}
			}
		}
		edits = append(edits,
			Set(id, "idle_timeout", 1234),
			Set(id, "retry.max_attempts", 3),
			Edit{Op: OpRenameNode, Node: id, NewID: id + "_renamed"},
			Edit{Op: OpDeleteNode, Node: id},
		)
		for _, other := range ids {
			if other != id {
				edits = append(edits, Edit{Op: OpAddDependency, Node: id, Dependency: other})
				break
			}
		}
		if len(ids) > 1 {
			edits = append(edits, Edit{Op: OpAddDependency, Node: id, Dependency: ids[len(ids)-1]})
		}
	}
	edits = append(edits, Edit{Op: OpAddNode, Node: "inverse_new", Kind: "bash", DependsOn: ids[:min(1, len(ids))]})
	return edits
}

// TestInverseProperty: for every file and every edit that applies to it,
// deleteNode included, the edit followed by its inverse gives the file
// back byte for byte. The inverse is structured (set, unset,
// removeDependency, renameNode, ...) where that is exact, restoreLines
// otherwise; both are counted, by op, and the structured ones must be
// most of the edits of a person (a field, a dependency, a rename).
func TestInverseProperty(t *testing.T) {
	var total, structured, restored int
	byOp := map[string][2]int{} // op -> structured, restored
	seen := map[string]bool{}
	// Under the race detector every 16th edit (a different sixteenth in each
	// file), which still covers every kind of edit; all of them without.
	stride := 1
	if raceEnabled {
		stride = 16
	}
	for fi, f := range inverseFiles(t) {
		if seen[string(f.src)] {
			continue // the same file in both Archon snapshots
		}
		seen[string(f.src)] = true
		d, err := Parse(f.src)
		if err != nil {
			continue // not an editable file: nothing to edit
		}
		for ei, e := range candidateEdits(d) {
			if (ei+fi)%stride != 0 {
				continue
			}
			out, err := Apply(f.src, []Edit{e})
			if err != nil || bytes.Equal(out, f.src) {
				continue // does not apply here, or a no-op
			}
			total++
			inv, err := Inverse(f.src, e)
			if err != nil {
				t.Errorf("%s: inverse of %+v: %v", f.name, e, err)
				continue
			}
			back, err := Apply(out, inv)
			if err != nil {
				t.Errorf("%s: %+v then its inverse %+v: %v\nafter the edit:\n%s", f.name, e, inv, err, out)
				continue
			}
			if !bytes.Equal(back, f.src) {
				t.Errorf("%s: %+v then its inverse %+v is not the file byte for byte:\n%s", f.name, e, inv, diffLines(string(f.src), string(back)))
				continue
			}
			n := byOp[e.Op]
			if inv[0].Op == OpRestoreLines {
				restored++
				n[1]++
				// The restored lines are the ones the edit changed (a
				// shortest line diff), the line above each insertion (the
				// edit checks it is still there), and a few unchanged
				// ones between two runs that could not be restored one by
				// one (a run inside a block scalar), not the whole file.
				lines := 0
				for _, r := range inv {
					lines += len(splitLines([]byte(r.Old))) + len(splitLines([]byte(r.Text)))
				}
				removed, added := lineDiff(string(out), string(f.src))
				if changed := len(removed) + len(added); lines < changed || lines > changed+2*len(inv)+4 {
					t.Errorf("%s: the inverse of %+v restores %d lines; %d changed: %+v", f.name, e, lines, changed, inv)
				}
			} else {
				structured++
				n[0]++
			}
			byOp[e.Op] = n
		}
	}
	t.Logf("%d edits, all undone byte for byte: %d by structured edits, %d by restoreLines; by op (structured, restored): %v", total, structured, restored, byOp)
	if total*stride < 2000 {
		t.Errorf("only %d edits tried: the corpus is missing?", total)
	}
	// deleteNode is always restored; the other edits mostly structured.
	if n := byOp[OpDeleteNode]; n[0] != 0 {
		t.Errorf("%d deleteNode edits undone by structured edits: there is none", n[0])
	}
	if del := byOp[OpDeleteNode][1]; (restored-del)*5 > total-del {
		t.Errorf("%d of %d edits other than deleteNode undone only by restoreLines", restored-del, total-del)
	}
}

// diffLines shows the lines of a and b that differ.
func diffLines(a, b string) string {
	removed, added := lineDiff(a, b)
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var s strings.Builder
	for _, l := range removed {
		fmt.Fprintf(&s, "-%d: %q\n", l, al[l-1])
	}
	for _, l := range added {
		fmt.Fprintf(&s, "+%d: %q\n", l, bl[l-1])
	}
	return s.String()
}

// FuzzInverse: for any text and edit that applies, the inverse applies to
// the result and gives the text back byte for byte; never a panic. Ops
// 6 and 7 are deleteNode and a restoreLines of arbitrary lines.
func FuzzInverse(f *testing.F) {
	f.Add([]byte(base), uint8(0), "a", "bash", "echo x")
	f.Add([]byte(base), uint8(1), "b", "model", "")
	f.Add([]byte(base), uint8(2), "c", "", "a")
	f.Add([]byte(base), uint8(3), "a", "", "b")
	f.Add([]byte(base), uint8(4), "a", "", "z")
	f.Add([]byte(base), uint8(5), "", "", "n")
	f.Add([]byte(base), uint8(6), "b", "", "")
	f.Add([]byte(base), uint8(7+8*3), "", "  - id: a\n", "  - id: z\n")
	f.Add([]byte("name: w\ndescription: d\nnodes:\n  - id: a\n    bash: x\n  - id: b\n    depends_on: []\n    bash: y\n"), uint8(3), "b", "", "a")
	f.Fuzz(func(t *testing.T, data []byte, op uint8, node, field, arg string) {
		var e Edit
		switch op % 8 {
		case 0:
			e = Set(node, field, arg)
		case 1:
			e = Edit{Op: OpUnset, Node: node, Field: field}
		case 2:
			e = Edit{Op: OpRemoveDependency, Node: node, Dependency: arg}
		case 3:
			e = Edit{Op: OpAddDependency, Node: node, Dependency: arg}
		case 4:
			e = Edit{Op: OpRenameNode, Node: node, NewID: arg}
		case 5:
			e = Edit{Op: OpAddNode, Node: arg, Kind: "bash"}
		case 6:
			e = Edit{Op: OpDeleteNode, Node: node}
		case 7:
			e = Edit{Op: OpRestoreLines, Line: int(op / 8), Old: field, Text: arg}
		}
		out, err := Apply(data, []Edit{e})
		if err != nil {
			return
		}
		inv, err := Inverse(data, e)
		if err != nil {
			t.Fatalf("%+v applies but has no inverse: %v", e, err)
		}
		back, err := Apply(out, inv)
		if err != nil {
			t.Fatalf("%+v then its inverse %+v: %v\n%s", e, inv, err, out)
		}
		if !bytes.Equal(back, data) {
			t.Fatalf("%+v then %+v is not the text byte for byte:\n%q\n---\n%q", e, inv, data, back)
		}
	})
}

// TestRestoreLines: restoreLines puts exact text back where the text it
// replaces still is, and refuses with a clear error (naming the line)
// anything else: a line out of range, text that is not there any more,
// partial lines, a result that is not a workflow file.
func TestRestoreLines(t *testing.T) {
	const src = "name: w\ndescription: d\nnodes:\n  - id: a\n    bash: echo a\n"
	const crlf = "name: w\r\ndescription: d\r\nnodes:\r\n  - id: a\r\n    bash: echo a\r\n"
	r := func(line int, old, text string) Edit {
		return Edit{Op: OpRestoreLines, Line: line, Old: old, Text: text}
	}
	for _, tc := range []struct {
		name, src string
		e         Edit
		want      string // the text, or
		err       string // the error
	}{
		{"replace a line", src, r(2, "description: d\n", "# kept\ndescription: 'd'\n"), "name: w\n# kept\ndescription: 'd'\nnodes:\n  - id: a\n    bash: echo a\n", ""},
		{"insert before a line", src, r(4, "", "  # the node\n"), "name: w\ndescription: d\nnodes:\n  # the node\n  - id: a\n    bash: echo a\n", ""},
		{"insert at the end", src, r(6, "", "# end\n"), src + "# end\n", ""},
		{"remove lines", src, r(2, "description: d\n", ""), "name: w\nnodes:\n  - id: a\n    bash: echo a\n", ""},
		{"crlf kept as given", crlf, r(1, "name: w\r\n", "name: v\r\n"), strings.Replace(crlf, "name: w", "name: v", 1), ""},
		{"last line without a break", "name: w\nnodes: []", r(2, "nodes: []", "nodes: [ ]"), "name: w\nnodes: [ ]", ""},
		{"line 0", src, r(0, "", "x: 1\n"), "", "line 0 is not a line of the file (it has 5)"},
		{"past the end", src, r(7, "", "x: 1\n"), "", "line 7 is not a line of the file"},
		{"text changed since", src, r(2, "description: e\n", "description: d\n"), "", "(line 2): the text at line 2 is not the text old this edit replaces"},
		{"old past the end", src, r(5, "    bash: echo a\nmore\n", ""), "", "the text at line 5 is not"},
		{"partial old", src, r(2, "description", "summary"), "", "old must be whole lines"},
		{"partial text", src, r(2, "description: d\n", "description: d"), "", "text must be whole lines"},
		{"result not yaml", src, r(2, "description: d\n", "description: [d\n"), "", "the result is not an editable workflow file"},
		{"result not a mapping", src, r(1, src, "- a\n"), "", "the result is not an editable workflow file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Apply([]byte(tc.src), []Edit{tc.e})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "edit 1 (restoreLines)") {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Fatalf("got:\n%q\nwant:\n%q", out, tc.want)
			}
			// Its own inverse gives the text back.
			inv, err := Inverse([]byte(tc.src), tc.e)
			if err != nil {
				t.Fatal(err)
			}
			if back, err := Apply(out, inv); err != nil || string(back) != tc.src {
				t.Fatalf("inverse %+v gave %q, %v", inv, back, err)
			}
		})
	}
}

// TestInverseDeleteNode: deleting a node that others wait for, and its
// inverse: the node's lines (comments, blank line) and every depends_on
// it was removed from come back byte for byte, as restoreLines edits of
// just those lines.
func TestInverseDeleteNode(t *testing.T) {
	const src = "name: w\ndescription: d\nnodes:\n  - id: a\n    bash: echo a\n\n  # b is the middle\n  - id: b\n    depends_on: [a]\n    bash: |\n      echo b\n\n      echo done\n\n  - id: c\n    depends_on:\n      - a\n      - b\n    bash: echo c\n\n  - id: d\n    depends_on: [b]   # just b\n    bash: echo d\n"
	e := Edit{Op: OpDeleteNode, Node: "b"}
	out, err := Apply([]byte(src), []Edit{e})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Inverse([]byte(src), e)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range inv {
		if r.Op != OpRestoreLines {
			t.Fatalf("inverse %+v: want restoreLines edits", inv)
		}
		if strings.Contains(r.Old+r.Text, "id: a") || strings.Contains(r.Old+r.Text, "id: c") {
			t.Errorf("restores more than the changed lines: %+v", r)
		}
	}
	if len(inv) != 3 {
		t.Errorf("inverse = %+v, want 3 runs (the node, c's entry, d's field)", inv)
	}
	if !strings.HasPrefix(inv[1].Old, "      - a\n") {
		t.Errorf("the insertion of c's entry does not check the line above it: %+v", inv[1])
	}
	back, err := Apply(out, inv)
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != src {
		t.Fatalf("got back:\n%s\nwant:\n%s", back, src)
	}
	// Applied to another text (the file changed there), it is refused.
	if _, err := Apply([]byte(strings.Replace(string(out), "depends_on:\n      - a", "depends_on:\n      - z", 1)), inv); err == nil {
		t.Errorf("the inverse applied to a changed text")
	}
}
