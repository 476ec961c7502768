package yamledit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/yamlflow"
)

// textField is the field of n whose text the corpus test changes.
func textField(n *yamlflow.Node) (string, string) {
	switch n.Kind {
	case yamlflow.KindPrompt:
		return "prompt", n.Prompt
	case yamlflow.KindLoop:
		return "loop.prompt", n.Loop.Prompt
	case yamlflow.KindBash:
		return "bash", n.Bash
	case yamlflow.KindCommand:
		return "command", n.Command
	}
	return "", ""
}

// valueNode finds the YAML node of a dotted field of node id.
func valueNode(t *testing.T, src []byte, id, field string) *yaml.Node {
	t.Helper()
	d, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	m, _, _, err := d.target(id)
	if err != nil {
		t.Fatal(err)
	}
	var v *yaml.Node
	for _, part := range strings.Split(field, ".") {
		_, v = lookup(m, part)
		if v == nil {
			return nil
		}
		m = v
	}
	return v
}

// TestCorpusRoundTrip edits every workflow of the shared corpus in three
// ways (change one line of a prompt, add a node, remove a dependency) and
// checks each diff touches only the intended lines, comments survive, and
// the result loads with yamlflow as the original did except for the edit.
func TestCorpusRoundTrip(t *testing.T) {
	files := corpusFiles(t)
	if len(files) != 37 {
		t.Logf("corpus has %d workflows (37 expected)", len(files))
	}
	for _, file := range files {
		name, _ := filepath.Rel(filepath.Join(sharedDir(t), "fixtures", "archon", "workflows"), file)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			wf0, diags0 := mustParse(t, name, src)
			nodes0 := nodeJSON(t, wf0)

			// No edits: the same bytes.
			same, err := Apply(src, nil)
			if err != nil || string(same) != string(src) {
				t.Fatalf("no-op changed the file (%v)", err)
			}

			t.Run("change one line of a text", func(t *testing.T) {
				var target *yamlflow.Node
				var field, old string
				for _, n := range wf0.Nodes {
					if f, v := textField(n); f != "" && strings.TrimSpace(v) != "" {
						target, field, old = n, f, v
						break
					}
				}
				if target == nil {
					t.Skip("no prompt, loop or bash node")
				}
				lines := strings.Split(old, "\n")
				k := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) != "" })
				lines[k] = "EDITED " + lines[k]
				newText := strings.Join(lines, "\n")
				if field == "command" {
					newText = old + "-edited"
				}
				out, err := Apply(src, []Edit{Set(target.ID, field, newText)})
				if err != nil {
					t.Fatal(err)
				}
				v := valueNode(t, src, target.ID, field)
				want := v.Line
				if v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
					want = v.Line + 1 + k
				}
				removed, added := lineDiff(string(src), string(out))
				if !slices.Equal(removed, []int{want}) || !slices.Equal(added, []int{want}) {
					t.Fatalf("diff touches lines -%v +%v, want only line %d:\n%s", removed, added, want, out)
				}
				wf1, diags1 := mustParse(t, name, out)
				nodes1 := nodeJSON(t, wf1)
				if f, v := textField(wf1.Node(target.ID)); f != field || v != newText {
					t.Fatalf("%s reads back as %q, want %q", field, v, newText)
				}
				delete(nodes0, target.ID)
				delete(nodes1, target.ID)
				assertSameNodes(t, nodes0, nodes1)
				if !slices.Equal(diagKeys(diags0), diagKeys(diags1)) {
					t.Fatalf("diagnostics changed:\n%v\n%v", diagKeys(diags0), diagKeys(diags1))
				}
				nodes0 = nodeJSON(t, wf0)
			})

			t.Run("add a node", func(t *testing.T) {
				last := wf0.Nodes[len(wf0.Nodes)-1].ID
				out, err := Apply(src, []Edit{{Op: OpAddNode, Node: "yamledit_added", Kind: "bash",
					Value: []byte(`"echo added\nls"`), DependsOn: []string{last}}})
				if err != nil {
					t.Fatal(err)
				}
				removed, added := lineDiff(string(src), string(out))
				if len(removed) != 0 || len(added) < 5 || len(added) > 6 {
					t.Fatalf("diff -%v +%v, want only 5 or 6 added lines:\n%s", removed, added, out)
				}
				if !slices.Equal(commentLines(string(src)), commentLines(string(out))) {
					t.Fatal("comments changed")
				}
				wf1, diags1 := mustParse(t, name, out)
				nodes1 := nodeJSON(t, wf1)
				n := wf1.Node("yamledit_added")
				if n == nil || n.Kind != yamlflow.KindBash || n.Bash != "echo added\nls" || !slices.Equal(n.DependsOn, []string{last}) {
					t.Fatalf("added node reads back as %+v", n)
				}
				delete(nodes1, "yamledit_added")
				assertSameNodes(t, nodes0, nodes1)
				if !slices.Equal(diagKeys(diags0), diagKeys(diags1)) {
					t.Fatalf("diagnostics changed:\n%v\n%v", diagKeys(diags0), diagKeys(diags1))
				}
			})

			t.Run("remove a dependency", func(t *testing.T) {
				var target *yamlflow.Node
				for _, n := range wf0.Nodes {
					if len(n.DependsOn) > 0 {
						target = n
						break
					}
				}
				if target == nil {
					t.Skip("no node has dependencies")
				}
				dep := target.DependsOn[0]
				deps := valueNode(t, src, target.ID, "depends_on")
				out, err := Apply(src, []Edit{{Op: OpRemoveDependency, Node: target.ID, Dependency: dep}})
				if err != nil {
					t.Fatal(err)
				}
				removed, added := lineDiff(string(src), string(out))
				var want []int
				switch {
				case deps.Style&yaml.FlowStyle != 0 && len(target.DependsOn) > 1:
					want = []int{deps.Line} // the list, rewritten on its line
				case deps.Style&yaml.FlowStyle != 0:
					want = []int{deps.Line} // the whole depends_on line
				case len(target.DependsOn) > 1:
					want = []int{deps.Content[0].Line}
				default:
					want = []int{deps.Line - 1, deps.Line} // depends_on: and its item
				}
				wantAdded := []int(nil)
				if deps.Style&yaml.FlowStyle != 0 && len(target.DependsOn) > 1 {
					wantAdded = want
				}
				if !slices.Equal(removed, want) || !slices.Equal(added, wantAdded) {
					t.Fatalf("diff -%v +%v, want -%v +%v:\n%s", removed, added, want, wantAdded, out)
				}
				if !slices.Equal(commentLines(string(src)), commentLines(string(out))) {
					t.Fatal("comments changed")
				}
				wf1, _, _ := yamlflow.Parse(name, out)
				if wf1 == nil {
					t.Fatal("does not parse")
				}
				if n := wf1.Node(target.ID); slices.Contains(n.DependsOn, dep) || len(n.DependsOn) != len(target.DependsOn)-1 {
					t.Fatalf("depends_on reads back as %v", n.DependsOn)
				}
				nodes1 := nodeJSON(t, wf1)
				delete(nodes1, target.ID)
				n0 := nodeJSON(t, wf0)
				delete(n0, target.ID)
				assertSameNodes(t, n0, nodes1)
			})

			t.Run("delete a node others depend on", func(t *testing.T) {
				var victim string
				for _, n := range wf0.Nodes {
					if len(n.DependsOn) > 0 {
						victim = n.DependsOn[0]
						break
					}
				}
				if victim == "" || len(wf0.Nodes) < 2 {
					t.Skip("no dependencies")
				}
				out, err := Apply(src, []Edit{{Op: OpDeleteNode, Node: victim}})
				if err != nil {
					t.Fatal(err)
				}
				_, added := lineDiff(string(src), string(out))
				outLines := strings.Split(string(out), "\n")
				for _, l := range added {
					if !strings.Contains(outLines[l-1], "depends_on") {
						t.Fatalf("added line %d %q is not a rewritten depends_on", l, outLines[l-1])
					}
				}
				wf1, _, _ := yamlflow.Parse(name, out)
				if wf1 == nil || wf1.Node(victim) != nil || len(wf1.Nodes) != len(wf0.Nodes)-1 {
					t.Fatalf("node %s still there:\n%s", victim, out)
				}
				for _, n := range wf0.Nodes {
					if n.ID == victim {
						continue
					}
					want := slices.DeleteFunc(slices.Clone(n.DependsOn), func(d string) bool { return d == victim })
					if got := wf1.Node(n.ID).DependsOn; !slices.Equal(got, want) {
						t.Fatalf("%s depends on %v, want %v", n.ID, got, want)
					}
				}
			})

			t.Run("add a node of every kind", func(t *testing.T) {
				var edits []Edit
				for _, k := range yamlflow.Kinds {
					edits = append(edits, Edit{Op: OpAddNode, Node: "new_" + string(k), Kind: string(k), DependsOn: []string{wf0.Nodes[0].ID}})
				}
				out, err := Apply(src, edits)
				if err != nil {
					t.Fatal(err)
				}
				removed, _ := lineDiff(string(src), string(out))
				if len(removed) != 0 {
					t.Fatalf("removed lines %v", removed)
				}
				wf1, _, err := yamlflow.Parse(name, out)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				for _, k := range yamlflow.Kinds {
					if n := wf1.Node("new_" + string(k)); n == nil || n.Kind != k {
						t.Fatalf("no %s node", k)
					}
				}
			})

			t.Run("all three, then delete the added node", func(t *testing.T) {
				first := wf0.Nodes[0].ID
				edits := []Edit{
					{Op: OpAddNode, Node: "extra", Kind: "approval", Value: []byte(`{"message":"OK?","on_reject":{"prompt":"fix: $REJECTION_REASON","max_attempts":2}}`), DependsOn: []string{first}},
					Set("extra", "retry", map[string]int{"max_attempts": 2}),
					Set("extra", "timeout", 60000),
					{Op: OpAddDependency, Node: "extra", Dependency: wf0.Nodes[len(wf0.Nodes)-1].ID},
					{Op: OpRenameNode, Node: "extra", NewID: "extra2"},
					{Op: OpDeleteNode, Node: "extra2"},
				}
				out, err := Apply(src, edits)
				if err != nil {
					t.Fatal(err)
				}
				if string(out) != string(src) {
					removed, added := lineDiff(string(src), string(out))
					t.Fatalf("add then delete left -%v +%v:\n%s", removed, added, out)
				}
			})
		})
	}
}

func assertSameNodes(t *testing.T, a, b map[string]string) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d nodes, want %d", len(b), len(a))
	}
	for id, j := range a {
		if b[id] != j {
			t.Fatalf("node %s changed:\n%s\n%s", id, j, b[id])
		}
	}
}

func ExampleApply() {
	src := []byte(`name: demo
description: an example
nodes:
  # the first step
  - id: hello
    bash: echo hello   # greet
  - id: bye
    depends_on: [hello]
    prompt: |
      Say goodbye.
      Be brief.
`)
	out, err := Apply(src, []Edit{
		Set("bye", "prompt", "Say goodbye.\nBe very brief.\n"),
		Set("hello", "timeout", 5000),
		{Op: OpAddNode, Node: "done", Kind: "cancel", Value: []byte(`"all done"`), DependsOn: []string{"bye"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// name: demo
	// description: an example
	// nodes:
	//   # the first step
	//   - id: hello
	//     bash: echo hello   # greet
	//     timeout: 5000
	//   - id: bye
	//     depends_on: [hello]
	//     prompt: |
	//       Say goodbye.
	//       Be very brief.
	//   - id: done
	//     depends_on: [bye]
	//     cancel: all done
}
