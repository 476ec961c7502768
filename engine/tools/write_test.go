package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noTemp fails if a Write left a temporary file in dir.
func noTemp(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	te := newEnv(t)

	t.Run("creates parents", func(t *testing.T) {
		out := mustOK(t, call(t, te.Env, "Write", map[string]any{"file_path": "a/b/c.txt", "content": "hello\n"}))
		p := filepath.Join(te.ws, "a", "b", "c.txt")
		if out != "Created "+p+" (6 bytes)." || readFile(t, p) != "hello\n" {
			t.Fatalf("%q / %q", out, readFile(t, p))
		}
		noTemp(t, filepath.Dir(p))
	})
	t.Run("overwrites and keeps the mode", func(t *testing.T) {
		p := put(t, filepath.Join(te.ws, "run.sh"), "#!/bin/sh\necho old\n")
		if err := os.Chmod(p, 0o750); err != nil {
			t.Fatal(err)
		}
		out := mustOK(t, call(t, te.Env, "Write", map[string]any{"file_path": p, "content": "#!/bin/sh\necho new\n"}))
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, "Updated ") || fi.Mode().Perm() != 0o750 || readFile(t, p) != "#!/bin/sh\necho new\n" {
			t.Fatalf("%q mode %v content %q", out, fi.Mode(), readFile(t, p))
		}
		noTemp(t, te.ws)
	})
	t.Run("empty content", func(t *testing.T) {
		mustOK(t, call(t, te.Env, "Write", map[string]any{"file_path": "empty", "content": ""}))
		if readFile(t, filepath.Join(te.ws, "empty")) != "" {
			t.Fatal("not empty")
		}
	})
	t.Run("second root", func(t *testing.T) {
		p := filepath.Join(te.art, "report.md")
		mustOK(t, call(t, te.Env, "Write", map[string]any{"file_path": p, "content": "# r\n"}))
		if readFile(t, p) != "# r\n" {
			t.Fatal("not written")
		}
	})
	t.Run("a folder", func(t *testing.T) {
		if err := os.Mkdir(filepath.Join(te.ws, "dir"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustErr(t, call(t, te.Env, "Write", map[string]any{"file_path": "dir", "content": "x"}), "Write: dir: is a directory")
		mustErr(t, call(t, te.Env, "Write", map[string]any{"file_path": ".", "content": "x"}), "is a directory")
	})
	t.Run("parent is a file", func(t *testing.T) {
		put(t, filepath.Join(te.ws, "plain"), "p")
		mustErr(t, call(t, te.Env, "Write", map[string]any{"file_path": "plain/child.txt", "content": "x"}), "Write: plain/child.txt")
	})
	t.Run("a dangling link inside is created", func(t *testing.T) {
		symlink(t, "made/by/link.txt", filepath.Join(te.ws, "dangling"))
		mustOK(t, call(t, te.Env, "Write", map[string]any{"file_path": "dangling", "content": "through\n"}))
		if readFile(t, filepath.Join(te.ws, "made", "by", "link.txt")) != "through\n" {
			t.Fatal("target not written")
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		mustErr(t, callTool(t, ctx, te.Env, "Write", map[string]any{"file_path": "never.txt", "content": "x"}), "cancelled")
		if _, err := os.Stat(filepath.Join(te.ws, "never.txt")); !os.IsNotExist(err) {
			t.Fatal("written after cancel")
		}
	})
}

func TestEdit(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	cases := []struct {
		name    string
		content string
		args    map[string]any
		want    string // file content after, or "" with err
		out     string
		err     []string
	}{
		{"unique", "a := 1\nb := 2\n", map[string]any{"old_string": "b := 2", "new_string": "b := 3"}, "a := 1\nb := 3\n", "replaced 1 occurrence.", nil},
		{"multi-line", "func f() {\n\treturn 1\n}\n", map[string]any{"old_string": "{\n\treturn 1\n}", "new_string": "{\n\treturn 2\n}"}, "func f() {\n\treturn 2\n}\n", "", nil},
		{"not unique", "x x x\n", map[string]any{"old_string": "x", "new_string": "y"}, "", "", []string{"old_string occurs 3 times in f.txt", "replace_all"}},
		{"replace_all", "x x x\n", map[string]any{"old_string": "x", "new_string": "y", "replace_all": true}, "y y y\n", "replaced 3 occurrences.", nil},
		{"replace_all on one", "x\n", map[string]any{"old_string": "x", "new_string": "y", "replace_all": true}, "y\n", "replaced 1 occurrence.", nil},
		{"absent", "abc\n", map[string]any{"old_string": "abd", "new_string": "x"}, "", "", []string{"old_string was not found in f.txt"}},
		{"whitespace matters", "\tindented\n", map[string]any{"old_string": "    indented", "new_string": "x"}, "", "", []string{"not found"}},
		{"same strings", "abc\n", map[string]any{"old_string": "abc", "new_string": "abc"}, "", "", []string{"old_string and new_string are the same"}},
		{"empty old_string", "abc\n", map[string]any{"old_string": "", "new_string": "x"}, "", "", []string{"old_string is empty", "Write"}},
		{"delete", "keep\ndrop\n", map[string]any{"old_string": "drop\n", "new_string": ""}, "keep\n", "", nil},
		{"CRLF file", "one\r\ntwo\r\nthree\r\n", map[string]any{"old_string": "one\ntwo", "new_string": "1\n2"}, "1\r\n2\r\nthree\r\n", "", nil},
		{"binary", "a\x00b", map[string]any{"old_string": "a", "new_string": "b"}, "", "", []string{"f.txt is a binary file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(te.ws, strings.ReplaceAll(c.name, " ", "_"))
			p := put(t, filepath.Join(dir, "f.txt"), c.content)
			c.args["file_path"] = filepath.Join(filepath.Base(dir), "f.txt")
			r := call(t, te.Env, "Edit", c.args)
			if c.err != nil {
				for i, e := range c.err {
					c.err[i] = strings.ReplaceAll(e, "f.txt", c.args["file_path"].(string))
				}
				mustErr(t, r, c.err...)
				if got := readFile(t, p); got != c.content {
					t.Fatalf("a failed edit changed the file to %q", got)
				}
				return
			}
			out := mustOK(t, r)
			if !strings.HasPrefix(out, "Edited "+p+": ") || !strings.HasSuffix(out, c.out) {
				t.Fatalf("output %q", out)
			}
			if got := readFile(t, p); got != c.want {
				t.Fatalf("file = %q, want %q", got, c.want)
			}
			noTemp(t, dir)
		})
	}
	t.Run("missing file", func(t *testing.T) {
		mustErr(t, call(t, te.Env, "Edit", map[string]any{"file_path": "nope.go", "old_string": "a", "new_string": "b"}), "Edit: nope.go does not exist")
	})
	t.Run("keeps the mode", func(t *testing.T) {
		p := put(t, filepath.Join(te.ws, "x.sh"), "echo a\n")
		if err := os.Chmod(p, 0o700); err != nil {
			t.Fatal(err)
		}
		mustOK(t, call(t, te.Env, "Edit", map[string]any{"file_path": "x.sh", "old_string": "a", "new_string": "b"}))
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o700 {
			t.Fatalf("mode %v", fi.Mode())
		}
	})
	t.Run("a folder", func(t *testing.T) {
		mustErr(t, call(t, te.Env, "Edit", map[string]any{"file_path": ".", "old_string": "a", "new_string": "b"}), "is a directory")
	})
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	te := newEnv(t)
	put(t, filepath.Join(te.ws, "a.txt"), "A\n")
	put(t, filepath.Join(te.out, "s.txt"), "S\n")
	symlink(t, filepath.Join(te.out, "s.txt"), filepath.Join(te.ws, "out"))
	if b, err := ReadFile(te.Env, "a.txt"); err != nil || string(b) != "A\n" {
		t.Fatalf("%q %v", b, err)
	}
	for p, want := range map[string]string{"out": "outside the workspace", "../outside/s.txt": "outside the workspace", "none": "none does not exist", ".": "is a directory"} {
		if _, err := ReadFile(te.Env, p); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("ReadFile(%q) = %v, want %q", p, err, want)
		}
	}
}
