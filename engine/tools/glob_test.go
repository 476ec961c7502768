package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// touch sets a file's modification time to base plus n minutes.
func touch(t *testing.T, p string, n int) {
	t.Helper()
	m := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Minute)
	if err := os.Chtimes(p, m, m); err != nil {
		t.Fatal(err)
	}
}

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"**/*.go", "a.go", true},
		{"**/*.go", "x/y/a.go", true},
		{"**/*.go", "x/y/a.gox", false},
		{"*.go", "x/a.go", false},
		{"src/**/*.ts", "src/a.ts", true},
		{"src/**/*.ts", "src/a/b/c.ts", true},
		{"src/**/*.ts", "lib/a.ts", false},
		{"**/*.{ts,tsx}", "a/b.tsx", true},
		{"**/*.{ts,tsx}", "a/b.js", false},
		{"{a,b}/{c,d}.txt", "b/c.txt", true},
		{"a/**", "a/b/c", true},
		{"**", "anything/at/all", true},
		{"a/**/b/**/c", "a/x/b/y/z/c", true},
		{"a/**/b/**/c", "a/x/c", false},
		{"?.md", "ab.md", false},
		{"[ab].md", "b.md", true},
		{"./x/*.go", "x/y.go", true},
		{`\{lit\}.txt`, "{lit}.txt", true},
		{"**/*.{js,{ts,tsx}}", "q/r.tsx", true},
	}
	for _, c := range cases {
		g, err := compileGlob(c.pattern)
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		if got := g.match(c.name); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	for _, bad := range []string{"", "[", "a/[b", "{a,b", "a}", strings.Repeat("{a,b}", 9)} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) accepted", bad)
		}
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	files := map[string]int{ // path: minutes (mtime order)
		"main.go":             5,
		"pkg/a.go":            9,
		"pkg/deep/b.go":       1,
		"pkg/deep/b_test.go":  7,
		"web/app.ts":          3,
		"web/app.tsx":         4,
		"README.md":           2,
		".git/config.go":      8,
		"vendor/.hidden/h.go": 6,
	}
	for p, n := range files {
		touch(t, put(t, filepath.Join(te.ws, p), "x\n"), n)
	}
	abs := func(ps ...string) string {
		for i, p := range ps {
			ps[i] = filepath.Join(te.ws, p)
		}
		return strings.Join(ps, "\n")
	}
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "**/*.go"}, abs("pkg/a.go", "pkg/deep/b_test.go", "vendor/.hidden/h.go", "main.go", "pkg/deep/b.go")},
		{map[string]any{"pattern": "*.go"}, abs("main.go")},
		{map[string]any{"pattern": "*.go", "path": "pkg"}, abs("pkg/a.go")},
		{map[string]any{"pattern": "**/*_test.go", "path": filepath.Join(te.ws, "pkg")}, abs("pkg/deep/b_test.go")},
		{map[string]any{"pattern": "web/*.{ts,tsx}"}, abs("web/app.tsx", "web/app.ts")},
		{map[string]any{"pattern": filepath.Join(te.ws, "pkg", "**", "b*.go")}, abs("pkg/deep/b_test.go", "pkg/deep/b.go")},
		{map[string]any{"pattern": filepath.Join(te.ws, "web", "*.ts"), "path": "pkg"}, abs("web/app.ts")},
		{map[string]any{"pattern": "**/*.rs"}, "No files found"},
		{map[string]any{"pattern": "pkg"}, "No files found"}, // folders are not listed
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) {
			if out := mustOK(t, call(t, te.Env, "Glob", c.args)); out != c.want {
				t.Fatalf("got\n%s\nwant\n%s", out, c.want)
			}
		})
	}
	mustErr(t, call(t, te.Env, "Glob", map[string]any{"pattern": "*", "path": "main.go"}), "Glob: main.go is not a folder")
	mustErr(t, call(t, te.Env, "Glob", map[string]any{"pattern": "*", "path": "nowhere"}), "Glob: nowhere does not exist")
}

func TestGlobCap(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	for i := range 250 {
		touch(t, put(t, filepath.Join(te.ws, "many", fmt.Sprintf("f%03d.txt", i)), ""), i)
	}
	out := mustOK(t, call(t, te.Env, "Glob", map[string]any{"pattern": "**/*.txt"}))
	lines := strings.Split(out, "\n")
	if len(lines) != GlobMaxResults+1 || lines[0] != filepath.Join(te.ws, "many", "f249.txt") ||
		lines[GlobMaxResults] != "... 150 more files not shown (use a narrower pattern or path)" {
		t.Fatalf("%d lines: first %q last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

// TestWalkCancel: a ctx that ends stops Glob and Grep walks midway: at most
// one more check after it turned.
func TestWalkCancel(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	for i := range 200 {
		put(t, filepath.Join(te.ws, fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%d.txt", i)), "needle\n")
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"Glob", map[string]any{"pattern": "**/*.txt"}},
		{"Grep", map[string]any{"pattern": "needle"}},
		{"Grep", map[string]any{"pattern": "needle", "output_mode": "content"}},
	} {
		ctx := newCountdown(20)
		mustErr(t, callTool(t, ctx, te.Env, c.tool, c.args), c.tool+": cancelled")
		if n := ctx.after.Load(); n > 3 {
			t.Fatalf("%s went on for %d checks after ctx ended", c.tool, n)
		}
		done, cancel := context.WithCancel(context.Background())
		cancel()
		mustErr(t, callTool(t, done, te.Env, c.tool, c.args), "cancelled")
	}
}
