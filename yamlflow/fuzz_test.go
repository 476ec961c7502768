package yamlflow

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParse: the loader never panics, and its results are consistent: an
// error comes with error diagnostics, every diagnostic has a code and a
// severity.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.yaml")
	// The real corpus makes good seeds when it is there.
	shared := os.Getenv("SWITCHYARD_SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "shared")
	}
	more, _ := filepath.Glob(filepath.Join(shared, "fixtures", "archon", "workflows", "*", "*.yaml"))
	seeds = append(seeds, more...)
	for _, s := range seeds {
		// Big seeds make the fuzzer spend its time minimizing them.
		if data, err := os.ReadFile(s); err == nil && len(data) <= 4096 {
			f.Add(data)
		}
	}
	f.Add([]byte("name: x\ndescription: d\nnodes:\n  - id: a\n    bash: echo\n    when: \"$a.output == 'x'\"\n"))
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("<<: *x"))
	f.Add([]byte("name: x\nnodes:\n  - <<: {id: a, bash: b}\n    <<: [{x: 1}, 2]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		wf, diags, err := Parse("fuzz.yaml", data)
		hasErr := false
		for _, d := range diags {
			if d.Code == "" || (d.Severity != SeverityError && d.Severity != SeverityWarning) || d.File != "fuzz.yaml" {
				t.Fatalf("malformed diagnostic %#v", d)
			}
			hasErr = hasErr || d.IsError()
		}
		if hasErr != (err != nil) {
			t.Fatalf("err = %v but error diagnostics = %v", err, hasErr)
		}
		if err == nil {
			if wf == nil || wf.Name == "" || len(wf.Nodes) == 0 {
				t.Fatalf("valid workflow without name or nodes: %+v", wf)
			}
			for _, n := range wf.Nodes {
				if n.ID == "" || n.Kind == "" {
					t.Fatalf("valid workflow with node %+v", n)
				}
			}
			if got := TopoOrder(wf); len(got) != len(wf.Nodes) {
				t.Fatalf("TopoOrder lost nodes")
			}
		}
	})
}

// FuzzWhen: the condition parser never panics, and a parsed expression's
// String() parses back to the same expression.
func FuzzWhen(f *testing.F) {
	for _, s := range []string{
		"$classify.output.issue_type == 'bug'",
		"$check-reproduction.output != 'NOT_REPRODUCED'",
		"$a.output == 'x' && $b.f > 1.5 || 'y' == $c.output",
		`$a.output == 'it\'s \\'`,
		"$a.output >= -1e3",
		"$a.output == true || $a.output != false",
		"$a.output = 'x'",
		"($a.output == 'x')",
		"$a.output.b.c == '1'",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseWhen(s)
		if err != nil {
			if e != nil {
				t.Fatal("expression and error both returned")
			}
			return
		}
		str := e.String()
		e2, err := ParseWhen(str)
		if err != nil {
			t.Fatalf("String() %q of %q does not parse: %v", str, s, err)
		}
		if !reflect.DeepEqual(e.or, e2.or) {
			t.Fatalf("round trip of %q changed it:\n%#v\n%#v", s, e.or, e2.or)
		}
		if e2.String() != str {
			t.Fatalf("String not stable: %q -> %q", str, e2.String())
		}
		_, _ = e.Eval(func(string, string) (any, bool, error) { return "1", true, nil })
		_ = e.Refs()
	})
}
