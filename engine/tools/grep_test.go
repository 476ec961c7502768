package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestGrep(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	files := map[string]struct {
		content string
		min     int
	}{
		"main.go":         {"package main\n\nfunc main() {\n\tprintln(\"Hello\")\n}\n", 3},
		"pkg/util.go":     {"package pkg\n\n// hello helper\nfunc Hello() string {\n\treturn \"hello\"\n}\n", 5},
		"web/app.ts":      {"export const hello = 1;\nconst other = 2;\n", 4},
		"docs/guide.md":   {"# Guide\nSay hello.\n", 1},
		"conf/app.yaml":   {"greeting: hello\n", 2},
		"img.bin":         {"hello\x00binary", 9},
		".git/HEAD":       {"hello from git\n", 9},
		"ctx.txt":         {"1\n2\nmatch a\n4\n5\n6\n7\n8\nmatch b\nmatch c\n11\n", 6},
		"multi/struct.go": {"type T struct {\n\tA int\n\tField string\n}\n", 7},
	}
	for p, f := range files {
		touch(t, put(t, filepath.Join(te.ws, p), f.content), f.min)
	}
	ws := func(p string) string { return filepath.Join(te.ws, p) }
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"files newest first", map[string]any{"pattern": "hello"},
			"Found 4 files\n" + strings.Join([]string{ws("pkg/util.go"), ws("web/app.ts"), ws("conf/app.yaml"), ws("docs/guide.md")}, "\n")},
		{"case-insensitive", map[string]any{"pattern": "hello", "-i": true, "path": "main.go"},
			"Found 1 file\n" + ws("main.go")},
		{"content", map[string]any{"pattern": "hello", "output_mode": "content", "path": "pkg"},
			"pkg/util.go:3:// hello helper\npkg/util.go:5:\treturn \"hello\""},
		{"content without numbers", map[string]any{"pattern": "Hello", "output_mode": "content", "-n": false, "glob": "*.go"},
			"main.go:\tprintln(\"Hello\")\npkg/util.go:func Hello() string {"},
		{"count", map[string]any{"pattern": "hello", "output_mode": "count", "-i": true, "type": "go"},
			"main.go:1\npkg/util.go:3\n\nFound 4 total occurrences across 2 files."},
		{"glob with a folder", map[string]any{"pattern": "hello", "glob": "pkg/*.go"}, "Found 1 file\n" + ws("pkg/util.go")},
		{"glob list", map[string]any{"pattern": "hello", "glob": "*.md,*.yaml"}, "Found 2 files\n" + ws("conf/app.yaml") + "\n" + ws("docs/guide.md")},
		{"glob braces", map[string]any{"pattern": "hello", "glob": "*.{md,ts}"}, "Found 2 files\n" + ws("web/app.ts") + "\n" + ws("docs/guide.md")},
		{"glob negated", map[string]any{"pattern": "hello", "glob": "!*.go !*.md"}, "Found 2 files\n" + ws("web/app.ts") + "\n" + ws("conf/app.yaml")},
		{"type yaml", map[string]any{"pattern": "hello", "type": "yml"}, "Found 1 file\n" + ws("conf/app.yaml")},
		{"type ts alias", map[string]any{"pattern": "hello", "type": "typescript"}, "Found 1 file\n" + ws("web/app.ts")},
		{"context", map[string]any{"pattern": "^match", "output_mode": "content", "-C": 1, "path": "ctx.txt"},
			"ctx.txt-2-2\nctx.txt:3:match a\nctx.txt-4-4\n--\nctx.txt-8-8\nctx.txt:9:match b\nctx.txt:10:match c\nctx.txt-11-11"},
		{"after only", map[string]any{"pattern": "match a", "output_mode": "content", "-A": 2, "path": "ctx.txt"},
			"ctx.txt:3:match a\nctx.txt-4-4\nctx.txt-5-5"},
		{"before beats -C", map[string]any{"pattern": "match a", "output_mode": "content", "-C": 2, "-B": 0, "path": "ctx.txt"},
			"ctx.txt:3:match a\nctx.txt-4-4\nctx.txt-5-5"},
		{"head_limit", map[string]any{"pattern": "^match", "output_mode": "content", "path": "ctx.txt", "head_limit": 2},
			"ctx.txt:3:match a\nctx.txt:9:match b\n\n... (head_limit 2 reached; more results not shown: use offset to page)"},
		{"offset", map[string]any{"pattern": "^match", "output_mode": "content", "path": "ctx.txt", "offset": 1},
			"ctx.txt:9:match b\nctx.txt:10:match c"},
		{"offset past the end", map[string]any{"pattern": "^match", "output_mode": "content", "path": "ctx.txt", "offset": 5},
			"(no results past offset 5)"},
		{"files head_limit", map[string]any{"pattern": "hello", "head_limit": 1},
			"Found 4 files\n" + ws("pkg/util.go") + "\n\n... (head_limit 1 reached; more results not shown: use offset to page)"},
		{"one line only", map[string]any{"pattern": `struct \{\s*A int\s*Field`, "path": "multi"}, "No files found"},
		{"multiline", map[string]any{"pattern": `struct \{.*?Field`, "multiline": true, "output_mode": "content", "path": "multi"},
			"multi/struct.go:1:type T struct {\nmulti/struct.go:2:\tA int\nmulti/struct.go:3:\tField string"},
		{"multiline count", map[string]any{"pattern": `^\t\w+`, "multiline": true, "output_mode": "count", "path": "multi"},
			"multi/struct.go:2\n\nFound 2 total occurrences across 1 file."},
		{"binary and .git skipped", map[string]any{"pattern": "binary|from git"}, "No files found"},
		{"no match content", map[string]any{"pattern": "zzz", "output_mode": "content"}, "No matches found"},
		{"no match count", map[string]any{"pattern": "zzz", "output_mode": "count"}, "No matches found"},
		{"pattern starting with -", map[string]any{"pattern": "-1", "path": "ctx.txt"}, "No files found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if out := mustOK(t, call(t, te.Env, "Grep", c.args)); out != c.want {
				t.Fatalf("got\n%s\nwant\n%s", out, c.want)
			}
		})
	}
	t.Run("second root is absolute", func(t *testing.T) {
		put(t, filepath.Join(te.art, "notes.txt"), "hello art\n")
		out := mustOK(t, call(t, te.Env, "Grep", map[string]any{"pattern": "art", "path": te.art, "output_mode": "content"}))
		if out != filepath.Join(te.art, "notes.txt")+":1:hello art" {
			t.Fatalf("got %q", out)
		}
	})
	mustErr(t, call(t, te.Env, "Grep", map[string]any{"pattern": "x", "path": "nowhere"}), "Grep: nowhere does not exist")
}

// TestGrepLimits: many matches and long lines stay within MaxResult, the
// cut is reported, and head_limit stops a content search early.
func TestGrepLimits(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "needle %d %s\n", i, strings.Repeat("-", 40))
	}
	for i := range 5 {
		put(t, filepath.Join(te.ws, fmt.Sprintf("f%02d.txt", i)), b.String())
	}
	put(t, filepath.Join(te.ws, "wide.txt"), "needle"+strings.Repeat("w", 5000)+"\n")

	r := call(t, te.Env, "Grep", map[string]any{"pattern": "needle", "output_mode": "content"})
	if !r.Cut || r.FullSize < 5*2000*50 || !strings.HasPrefix(r.Output, "f00.txt:1:needle 0 ") {
		t.Fatalf("Cut=%v FullSize=%d start %q", r.Cut, r.FullSize, r.Output[:40])
	}
	out := mustOK(t, call(t, te.Env, "Grep", map[string]any{"pattern": "needle", "output_mode": "content", "path": "wide.txt"}))
	if out != "wide.txt:1:needle"+strings.Repeat("w", GrepMaxLineChars-6)+" [... line cut]" {
		t.Fatalf("wide line: %d bytes", len(out))
	}
	out = mustOK(t, call(t, te.Env, "Grep", map[string]any{"pattern": "needle", "output_mode": "count"}))
	if !strings.HasSuffix(out, "Found 10001 total occurrences across 6 files.") {
		t.Fatalf("count tail %q", out[len(out)-80:])
	}
	out = mustOK(t, call(t, te.Env, "Grep", map[string]any{"pattern": "needle", "output_mode": "count", "head_limit": 2}))
	if !strings.HasPrefix(out, "f00.txt:2000\nf01.txt:2000\n\n... (head_limit 2") || !strings.Contains(out, "Found 10001 total") {
		t.Fatalf("count with head_limit: %q", out)
	}
	out = mustOK(t, call(t, te.Env, "Grep", map[string]any{"pattern": "needle 1999 ", "output_mode": "content", "head_limit": 3, "glob": "f0*"}))
	if !strings.HasPrefix(out, "f00.txt:2000:needle 1999 ") || strings.Count(out, "\n") != 4 {
		t.Fatalf("got %q", out)
	}
}
