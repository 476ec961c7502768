package yamledit

import (
	"errors"
	"strings"
	"testing"
)

// TestDuplicateIDsAreRefused: in a file where two nodes share an id, an
// edit naming that id could land on either (it landed on the first): every
// edit is refused, naming the id and both lines, and nothing changes.
func TestDuplicateIDsAreRefused(t *testing.T) {
	t.Parallel()
	src := []byte("name: dup\ndescription: two nodes share an id\nnodes:\n" +
		"  - id: a\n    bash: echo one\n" +
		"  - id: b\n    bash: echo b\n" +
		"  - id: \" a \"\n    bash: echo two\n")
	for _, e := range []Edit{
		Set("a", "bash", "echo two"),
		Set("b", "bash", "echo changed"),
		Set("", "description", "x"),
		{Op: OpDeleteNode, Node: "a"},
		{Op: OpRenameNode, Node: "a", NewID: "c"},
		{Op: OpAddNode, Node: "c", Kind: "bash", Value: []byte(`"echo"`)},
	} {
		out, err := Apply(src, []Edit{e})
		var ee *Error
		if err == nil || !errors.As(err, &ee) {
			t.Errorf("%+v: applied (%v):\n%s", e, err, out)
			continue
		}
		if !strings.Contains(ee.Msg, `"a"`) || !strings.Contains(ee.Msg, "lines 4 and 8") {
			t.Errorf("%+v: error %q does not name the id and its lines", e, err)
		}
	}
	if out, err := Apply(src, nil); err != nil || string(out) != string(src) {
		t.Errorf("no edits: %v", err)
	}
}

// TestDuplicateKeysAreRefused: in a mapping that holds a key twice, an
// edit of that key changed the first of them (FuzzNoOpEdit found a set to
// the second's value that changed the file). YAML does not allow such a
// mapping and the loader refuses the file: every edit is refused, naming
// the field, its node and both lines, and nothing changes.
func TestDuplicateKeysAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, src, want string }{
		{"top level", "name: dup\ndescription: one\ndescription: two\nnodes:\n  - id: a\n    bash: echo a\n",
			`field "description" is defined twice (lines 2 and 3)`},
		{"in a node", "name: dup\nnodes:\n  - id: a\n    bash: echo one\n    bash: echo two\n  - id: b\n    bash: echo b\n",
			`node "a": field "bash" is defined twice (lines 4 and 5)`},
		{"nested", "name: dup\nnodes:\n  - id: a\n    bash: echo\n    retry:\n      max_attempts: 2\n      max_attempts: 3\n",
			`node "a": field "max_attempts" is defined twice (lines 6 and 7)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, e := range []Edit{
				Set("", "description", "two"),
				Set("a", "bash", "echo two"),
				Set("a", "retry.max_attempts", "3"),
				{Op: OpRenameNode, Node: "a", NewID: "c"},
				{Op: OpAddNode, Node: "c", Kind: "bash", Value: []byte(`"echo"`)},
			} {
				out, err := Apply([]byte(tc.src), []Edit{e})
				var ee *Error
				if err == nil || !errors.As(err, &ee) {
					t.Errorf("%+v: applied (%v):\n%s", e, err, out)
					continue
				}
				if !strings.Contains(ee.Msg, tc.want) {
					t.Errorf("%+v: error %q, want it to say %q", e, ee.Msg, tc.want)
				}
			}
			if out, err := Apply([]byte(tc.src), nil); err != nil || string(out) != tc.src {
				t.Errorf("no edits: %v", err)
			}
		})
	}
}
