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
	f.Add([]byte("name: x\ndescription: d\nnodes:\n  - id: a\n    bash: echo\n  - id: r\n    include: block\n    depends_on: [a]\n    when: \"$a.output == 'x'\"\n  - id: z\n    prompt: $r.output\n    depends_on: [r]\n"))
	f.Add([]byte("name: x\ndescription: d\nnodes:\n  - id: r\n    include: self\n"))
	f.Add([]byte("name: x\ndescription: d\nnodes:\n  - id: a\n    prompt: p\n    skills: [s]\n    hooks:\n      PreToolUse:\n        - matcher: \"Write|Edit\"\n          response: {decision: block, hookSpecificOutput: {permissionDecision: ask, additionalContext: c}}\n      Stop: []\n"))
	block, err := os.ReadFile("testdata/include/block.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Includes: "block" is a real block, any other name the fuzzed
		// text itself (so includes nest until a cycle or the depth limit).
		resolve := func(name string) (string, []byte, error) {
			if name == "block" {
				return "block.yaml", block, nil
			}
			return name + ".yaml", data, nil
		}
		wf, diags, err := Parse("fuzz.yaml", data, WithIncludeResolver(resolve))
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
		// Renaming the references (includes) keeps the condition valid and
		// renames exactly the references.
		rename := map[string]string{}
		var want []Ref
		for _, r := range e.Refs() {
			rename[r.NodeID] = "ns__" + r.NodeID
		}
		for _, r := range e.Refs() {
			want = append(want, Ref{NodeID: rename[r.NodeID], Field: r.Field})
		}
		renamed, err := ParseWhen(renameWhenRefs(s, rename))
		if err != nil {
			t.Fatalf("renamed %q does not parse: %v", renameWhenRefs(s, rename), err)
		}
		if got := renamed.Refs(); !reflect.DeepEqual(got, want) {
			t.Fatalf("renamed refs of %q = %v, want %v", s, got, want)
		}
	})
}
