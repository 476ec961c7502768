package yamledit

import (
	"errors"
	"strings"
	"testing"
)

const base = `# top comment
name: demo   # the name
description: "quoted desc"

nodes:
  - id: a
    bash: 'echo a'
    retry: {max_attempts: 2, delay_ms: 1000}

  # b waits for a
  - id: b
    depends_on:
      - a
    prompt: >
      folded
      text
    model: gpt-5 # fast
  - depends_on: [a, b]
    id: c
    loop:
      prompt: |
        keep going

        until done
      until: DONE
      max_iterations: 3
`

func TestEdits(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		edits []Edit
		want  string // a replacement "old=>new" list applied to src, or the whole text
	}{
		{"set quoted keeps quotes", base, []Edit{Set("a", "bash", "echo A")},
			"    bash: 'echo a'=>    bash: 'echo A'"},
		{"set top level keeps comment", base, []Edit{Set("", "name", "demo2")},
			"name: demo   # the name=>name: demo2   # the name"},
		{"set double quoted", base, []Edit{Set("", "description", "new")},
			`description: "quoted desc"=>description: "new"`},
		{"set inside flow mapping", base, []Edit{Set("a", "retry.max_attempts", 3)},
			"{max_attempts: 2, delay_ms: 1000}=>{max_attempts: 3, delay_ms: 1000}"},
		{"add to flow mapping", base, []Edit{Set("a", "retry.on_error", "all")},
			"{max_attempts: 2, delay_ms: 1000}=>{max_attempts: 2, delay_ms: 1000, on_error: all}"},
		{"set block scalar line", base, []Edit{Set("c", "loop.prompt", "keep going\n\nuntil really done\n")},
			"        until done=>        until really done"},
		{"set nested block", base, []Edit{Set("c", "loop.max_iterations", 9)},
			"      max_iterations: 3=>      max_iterations: 9"},
		{"new nested field", base, []Edit{Set("b", "retry.max_attempts", 2)},
			"    model: gpt-5 # fast\n=>    model: gpt-5 # fast\n    retry:\n      max_attempts: 2\n"},
		{"unset with comment", base, []Edit{{Op: OpUnset, Node: "b", Field: "model"}},
			"    model: gpt-5 # fast\n=>"},
		{"unset folded", base, []Edit{{Op: OpUnset, Node: "b", Field: "prompt"}},
			"    prompt: >\n      folded\n      text\n=>"},
		{"unset first key of item", base, []Edit{{Op: OpUnset, Node: "c", Field: "depends_on"}},
			"  - depends_on: [a, b]\n    id: c=>  - id: c"},
		{"set null removes", base, []Edit{{Op: OpSet, Node: "a", Field: "retry", Value: []byte("null")}},
			"    retry: {max_attempts: 2, delay_ms: 1000}\n=>"},
		{"block deps add", base, []Edit{{Op: OpAddDependency, Node: "b", Dependency: "c"}},
			"      - a\n=>      - a\n      - c\n"},
		{"flow deps remove", base, []Edit{{Op: OpRemoveDependency, Node: "c", Dependency: "a"}},
			"[a, b]=>[b]"},
		{"deps added after id", base, []Edit{{Op: OpAddDependency, Node: "a", Dependency: "b"}},
			"    bash: 'echo a'=>    depends_on: [b]\n    bash: 'echo a'"},
		{"rename follows deps", base, []Edit{{Op: OpRenameNode, Node: "a", NewID: "first"}},
			"  - id: a=>  - id: first§      - a=>      - first§[a, b]=>[first, b]"},
		{"delete node", base, []Edit{{Op: OpDeleteNode, Node: "a"}},
			"  - id: a\n    bash: 'echo a'\n    retry: {max_attempts: 2, delay_ms: 1000}\n\n=>§    depends_on:\n      - a\n=>§[a, b]=>[b]"},
		{"set multi-line on plain", base, []Edit{Set("a", "bash", "set -e\necho a\n")},
			"    bash: 'echo a'=>    bash: |\n      set -e\n      echo a"},
		{"set to a list", base, []Edit{Set("", "tags", []string{"x", "y"})},
			`description: "quoted desc"=>description: "quoted desc"` + "\ntags: [x, y]"},
		{"string that looks like a number", base, []Edit{Set("b", "model", "123")},
			`model: gpt-5 # fast=>model: "123" # fast`},
		{"crlf", "name: x\r\ndescription: y\r\nnodes:\r\n  - id: a\r\n    bash: echo\r\n",
			[]Edit{Set("a", "timeout", 10), Set("", "name", "z")},
			"name: x=>name: z§    bash: echo\r\n=>    bash: echo\r\n    timeout: 10\r\n"},
		{"no trailing newline", "name: x\ndescription: y\nnodes:\n  - id: a\n    bash: echo",
			[]Edit{{Op: OpAddNode, Node: "b", Kind: "prompt", Value: []byte(`"hi"`)}},
			"    bash: echo=>    bash: echo\n  - id: b\n    prompt: hi"},
		{"compact list", "name: x\ndescription: y\nnodes:\n- id: a\n  bash: echo\n",
			[]Edit{{Op: OpAddNode, Node: "b", Kind: "loop", DependsOn: []string{"a"}}},
			"  bash: echo\n=>  bash: echo\n- id: b\n  depends_on: [a]\n  loop:\n    prompt: Work on the task. Say DONE when finished.\n    until: DONE\n    max_iterations: 5\n"},
		{"flow node", "name: x\ndescription: y\nnodes:\n  - id: a\n    bash: echo\n  - {id: b, bash: 'echo b'}  # flow\n",
			[]Edit{Set("b", "bash", "echo c"), {Op: OpAddDependency, Node: "b", Dependency: "a"}},
			"{id: b, bash: 'echo b'}=>{id: b, depends_on: [a], bash: 'echo c'}"},
		{"flow deps with a comment", "name: x\ndescription: y\nnodes:\n  - id: a\n    bash: echo\n  - id: b\n    depends_on: [\"a\"]  # after a\n    bash: echo\n  - id: c\n    bash: echo\n",
			[]Edit{{Op: OpAddDependency, Node: "b", Dependency: "c"}},
			`["a"]  # after a=>["a", c]  # after a`},
		{"flow deps on their own line stay there", "name: x\ndescription: y\nnodes:\n  - id: a\n    bash: echo\n  - id: b\n    depends_on:\n      [a]\n    bash: echo\n  - id: c\n    bash: echo\n",
			[]Edit{{Op: OpAddDependency, Node: "b", Dependency: "c"}},
			"    depends_on:\n      [a]\n=>    depends_on:\n      [a, c]\n"},
		{"after places a new field", base, []Edit{{Op: OpSet, Node: "b", Field: "timeout", Value: []byte("5"), After: "depends_on"}},
			"      - a\n=>      - a\n    timeout: 5\n"},
		{"after places a new top-level field", base, []Edit{{Op: OpSet, Field: "model", Value: []byte(`"m"`), After: "name"}},
			"name: demo   # the name\n=>name: demo   # the name\nmodel: m\n"},
		{"after places a new nested mapping", base, []Edit{{Op: OpSet, Node: "b", Field: "retry.max_attempts", Value: []byte("2"), After: "id"}},
			"  - id: b\n=>  - id: b\n    retry:\n      max_attempts: 2\n"},
		{"no-op set", base, []Edit{Set("a", "bash", "echo a"), Set("c", "loop.until", "DONE")}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.src
			if tc.want != "" {
				for _, rep := range strings.Split(tc.want, "§") {
					old, nw, _ := strings.Cut(rep, "=>")
					if !strings.Contains(want, old) {
						t.Fatalf("bad case: %q not in source", old)
					}
					want = strings.Replace(want, old, nw, 1)
				}
			}
			got, err := Apply([]byte(tc.src), tc.edits)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestEditErrors(t *testing.T) {
	anchored := "name: x\ndescription: y\nnodes:\n  - id: a\n    bash: &cmd echo\n  - id: b\n    bash: *cmd\n"
	cases := []struct {
		name string
		src  string
		edit Edit
		want string
	}{
		{"unknown node", base, Set("zz", "bash", "x"), `edit 1 (set): node "zz": field "bash": no node with id "zz"`},
		{"bad field", base, Set("a", "retry..x", 1), `field "retry..x": a field is a dotted path`},
		{"id via set", base, Set("a", "id", "q"), "use renameNode"},
		{"through a scalar", base, Set("a", "bash.x", 1), `(line 7): field "bash.x": bash is not a mapping`},
		{"unknown op", base, Edit{Op: "explode"}, `unknown op "explode"`},
		{"after a missing field", base, Edit{Op: OpSet, Node: "b", Field: "timeout", Value: []byte("5"), After: "nope"}, `(line 11): field "timeout": after: the mapping has no field "nope"`},
		{"no op", base, Edit{}, "op is required"},
		{"bad kind", base, Edit{Op: OpAddNode, Node: "n", Kind: "robot"}, `kind "robot" is not one of command, prompt`},
		{"duplicate id", base, Edit{Op: OpAddNode, Node: "a", Kind: "bash"}, `a node with id "a" already exists`},
		{"bad new id", base, Edit{Op: OpAddNode, Node: "a b", Kind: "bash"}, "the new node's id must be"},
		{"dep unknown", base, Edit{Op: OpAddDependency, Node: "a", Dependency: "nope"}, `dependency: no node with id "nope"`},
		{"self dep", base, Edit{Op: OpAddDependency, Node: "a", Dependency: "a"}, "cannot depend on itself"},
		{"rename taken", base, Edit{Op: OpRenameNode, Node: "a", NewID: "b"}, `a node with id "b" already exists`},
		{"bad json", base, Edit{Op: OpSet, Node: "a", Field: "bash", Value: []byte(`{`)}, "value: not valid JSON"},
		{"anchor", anchored, Set("a", "bash", "x"), "anchor or alias"},
		{"last node", "name: x\ndescription: y\nnodes:\n  - id: a\n    bash: echo\n", Edit{Op: OpDeleteNode, Node: "a"}, "only node"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Apply([]byte(tc.src), []Edit{tc.edit})
			var ee *Error
			if !errors.As(err, &ee) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an *Error containing %q", err, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "- a\n- b\n", "{name: x}", "a: 1\n---\nb: 2\n", "a: [\n"} {
		if _, err := Apply([]byte(bad), nil); !errors.Is(err, ErrParse) {
			t.Errorf("%q: err = %v, want ErrParse", bad, err)
		}
	}
}
