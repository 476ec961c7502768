package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLS(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	put(t, filepath.Join(te.ws, "b.go"), "")
	put(t, filepath.Join(te.ws, "a.txt"), "")
	put(t, filepath.Join(te.ws, ".env"), "")
	put(t, filepath.Join(te.ws, "src", "x.go"), "")
	put(t, filepath.Join(te.ws, "node_modules", "m.js"), "")
	symlink(t, "src/x.go", filepath.Join(te.ws, "link.go"))
	if err := os.Mkdir(filepath.Join(te.ws, "void"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": "."}, te.ws + "/\n  .env\n  a.txt\n  b.go\n  link.go -> src/x.go\n  node_modules/\n  src/\n  void/"},
		{map[string]any{"path": te.ws, "ignore": []string{"node_modules", "*.go", ".*"}}, te.ws + "/\n  a.txt\n  src/\n  void/"},
		{map[string]any{"path": "src"}, filepath.Join(te.ws, "src") + "/\n  x.go"},
		{map[string]any{"path": "void"}, filepath.Join(te.ws, "void") + "/\n  (empty)"},
		{map[string]any{"path": "void", "ignore": "*"}, filepath.Join(te.ws, "void") + "/\n  (empty)"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) {
			if out := mustOK(t, call(t, te.Env, "LS", c.args)); out != c.want {
				t.Fatalf("got\n%s\nwant\n%s", out, c.want)
			}
		})
	}
	mustErr(t, call(t, te.Env, "LS", map[string]any{"path": "a.txt"}), "LS: a.txt is a file", "Read")
	mustErr(t, call(t, te.Env, "LS", map[string]any{"path": "gone"}), "LS: gone does not exist")

	for i := range LSMaxEntries + 5 {
		put(t, filepath.Join(te.ws, "big", fmt.Sprintf("%04d", i)), "")
	}
	out := mustOK(t, call(t, te.Env, "LS", map[string]any{"path": "big"}))
	lines := strings.Split(out, "\n")
	if len(lines) != LSMaxEntries+2 || lines[len(lines)-1] != "... 5 more entries not shown (use Glob to narrow)" {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}
