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
