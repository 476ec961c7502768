package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	w := func(name, content string) string { return put(t, filepath.Join(te.ws, name), content) }
	w("three.txt", "alpha\nbeta\ngamma\n")
	w("noeol.txt", "a\nb")
	w("crlf.txt", "a\r\nb\r\n")
	w("empty.txt", "")
	w("blank.txt", "\n")
	w("long.txt", strings.Repeat("é", 2500)+"\nshort\n")
	w("nul.bin", "text\x00more")
	w("latin1.txt", "caf\xe9 au lait, na\xefve, r\xe9sum\xe9 and a lot of plain ascii around it\n")
	w("garbage.bin", strings.Repeat("\xff\xfe\x80\x81", 100))
	w("sub/x.txt", "x\n")
	var many strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&many, "%c\n", 'a'+i%26)
	}
	w("many.txt", many.String())

	cases := []struct {
		name string
		args map[string]any
		want string // exact output, or a prefix ending in "…"
		err  []string
	}{
		{"numbered", map[string]any{"file_path": "three.txt"}, "     1\talpha\n     2\tbeta\n     3\tgamma", nil},
		{"offset", map[string]any{"file_path": "three.txt", "offset": 2}, "     2\tbeta\n     3\tgamma", nil},
		{"offset 0 is 1", map[string]any{"file_path": "three.txt", "offset": 0, "limit": 1}, "     1\talpha\n... (more lines follow; read on with offset=2)", nil},
		{"limit", map[string]any{"file_path": "three.txt", "offset": 2, "limit": 1}, "     2\tbeta\n... (more lines follow; read on with offset=3)", nil},
		{"limit to the end", map[string]any{"file_path": "three.txt", "offset": 2, "limit": 2}, "     2\tbeta\n     3\tgamma", nil},
		{"no final newline", map[string]any{"file_path": "noeol.txt"}, "     1\ta\n     2\tb", nil},
		{"CRLF", map[string]any{"file_path": "crlf.txt"}, "     1\ta\n     2\tb", nil},
		{"absolute", map[string]any{"file_path": filepath.Join(te.ws, "sub", "x.txt")}, "     1\tx", nil},
		{"empty", map[string]any{"file_path": "empty.txt"}, "empty.txt exists but is empty.", nil},
		{"one blank line", map[string]any{"file_path": "blank.txt"}, "     1\t", nil},
		{"past the end", map[string]any{"file_path": "three.txt", "offset": 9}, "three.txt has 3 lines; offset 9 is past its end.", nil},
		{"long line", map[string]any{"file_path": "long.txt"}, "     1\t" + strings.Repeat("é", 2000) + " ... [line cut at 2000 characters]\n     2\tshort", nil},
		{"latin-1 text reads", map[string]any{"file_path": "latin1.txt"}, "     1\tcaf\uFFFD au lait…", nil},
		{"NUL is binary", nil, "", []string{"nul.bin is a binary file (9 bytes)"}},
		{"invalid UTF-8 is binary", nil, "", []string{"garbage.bin is a binary file"}},
		{"directory", map[string]any{"file_path": "sub"}, "", []string{"sub is a directory; use LS"}},
		{"missing", map[string]any{"file_path": "nope.txt"}, "", []string{"Read: nope.txt does not exist"}},
		{"missing folder", map[string]any{"file_path": "no/such/file"}, "", []string{"no/such/file does not exist"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.args == nil {
				c.args = map[string]any{"file_path": strings.Fields(c.err[0])[0]}
			}
			r := call(t, te.Env, "Read", c.args)
			if c.err != nil {
				mustErr(t, r, c.err...)
				return
			}
			out := mustOK(t, r)
			if p, ok := strings.CutSuffix(c.want, "…"); ok {
				if !strings.HasPrefix(out, p) {
					t.Fatalf("got %q, want prefix %q", out, p)
				}
			} else if out != c.want {
				t.Fatalf("got %q\nwant %q", out, c.want)
			}
		})
	}

	t.Run("default limit", func(t *testing.T) {
		out := mustOK(t, call(t, te.Env, "Read", map[string]any{"file_path": "many.txt"}))
		lines := strings.Split(out, "\n")
		if len(lines) != ReadDefaultLimit+1 || lines[ReadDefaultLimit-1] != "  2000\ty" ||
			lines[ReadDefaultLimit] != "... (more lines follow; read on with offset=2001)" {
			t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-2:])
		}
		out = mustOK(t, call(t, te.Env, "Read", map[string]any{"file_path": "many.txt", "offset": 4999}))
		if out != "  4999\th\n  5000\ti" {
			t.Fatalf("tail: %q", out)
		}
	})
}

// TestReadHuge: a file whose lines exceed MaxResult is cut with a note;
// a single line of many megabytes is read without holding it.
func TestReadHuge(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	put(t, filepath.Join(te.ws, "wide.txt"), strings.Repeat(strings.Repeat("w", 1500)+"\n", 3000))
	r := call(t, te.Env, "Read", map[string]any{"file_path": "wide.txt"})
	out := mustOK(t, r)
	if !r.Cut || r.FullSize < 2000*1500 || !strings.Contains(out, "[output cut: ") || !strings.HasPrefix(out, "     1\twww") {
		t.Fatalf("Cut=%v FullSize=%d tail %q", r.Cut, r.FullSize, out[len(out)-120:])
	}
	// The "more lines" hint survives the cut.
	if !strings.HasSuffix(out, "read on with offset=2001)") {
		t.Fatalf("tail %q", out[len(out)-120:])
	}
	f, err := os.Create(filepath.Join(te.ws, "oneline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := strings.Repeat("z", 1<<20)
	for range 64 {
		if _, err := f.WriteString(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.WriteString("\nsecond\n")
	f.Close()
	out = mustOK(t, call(t, te.Env, "Read", map[string]any{"file_path": "oneline.txt"}))
	if out != "     1\t"+strings.Repeat("z", 2000)+" ... [line cut at 2000 characters]\n     2\tsecond" {
		t.Fatalf("got %d bytes: %q", len(out), out[len(out)-60:])
	}
}

func TestReadCancelled(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	put(t, filepath.Join(te.ws, "f.txt"), strings.Repeat("x\n", 100000))
	ctx := newCountdown(3)
	r := callTool(t, ctx, te.Env, "Read", map[string]any{"file_path": "f.txt", "limit": 100000})
	mustErr(t, r, "Read: cancelled")
	ctx2, cancel := context.WithCancel(context.Background())
	cancel()
	mustErr(t, callTool(t, ctx2, te.Env, "Read", map[string]any{"file_path": "f.txt"}), "cancelled")
}

// TestSpecialFiles: a FIFO in the workspace is refused or skipped, never
// waited on (opening one for reading blocks until a writer comes).
func TestSpecialFiles(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	fifo := filepath.Join(te.ws, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	put(t, filepath.Join(te.ws, "f.txt"), "pipe dream\n")
	mustErr(t, call(t, te.Env, "Read", map[string]any{"file_path": "pipe"}), "Read: pipe is not a regular file")
	mustErr(t, call(t, te.Env, "Edit", map[string]any{"file_path": "pipe", "old_string": "a", "new_string": "b"}), "Edit: pipe: is not a regular file")
	mustErr(t, call(t, te.Env, "Write", map[string]any{"file_path": "pipe", "content": "x"}), "Write: pipe: is not a regular file")
	if out := mustOK(t, call(t, te.Env, "Grep", map[string]any{"pattern": "pipe", "path": "pipe"})); out != "No files found" {
		t.Fatalf("Grep on the FIFO: %q", out)
	}
	if out := mustOK(t, call(t, te.Env, "Grep", map[string]any{"pattern": "pipe"})); out != "Found 1 file\n"+filepath.Join(te.ws, "f.txt") {
		t.Fatalf("Grep beside the FIFO: %q", out)
	}
}
