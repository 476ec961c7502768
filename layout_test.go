package switchyard

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReadmeLayoutNamesEveryPackage: every Go package of the module (what
// `go list ./...` lists) is named in README's Layout section, as `dir/`
// or `dir`, and the section names no package directory that is gone.
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "\n## Layout\n")
	if start < 0 {
		t.Fatal("README has no Layout section")
	}
	section := text[start+len("\n## Layout\n"):]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	pkgs := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
			name == "testdata" || name == "node_modules" || name == "web") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			pkgs[filepath.ToSlash(filepath.Dir(path))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range pkgs {
		if dir == "." {
			if !strings.Contains(section, "root package") {
				t.Error("README's Layout section does not name the root package")
			}
			continue
		}
		if !strings.Contains(section, "`"+dir+"/`") && !strings.Contains(section, "`"+dir+"`") {
			t.Errorf("README's Layout section does not name package %s", dir)
		}
	}
	// Every `dir/` it names with a Go file is a package.
	for _, f := range strings.Split(section, "`") {
		dir := strings.TrimSuffix(f, "/")
		if dir == f || strings.ContainsAny(dir, " *") || dir == "" {
			continue
		}
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			continue
		}
		t.Errorf("README's Layout section names %s/, which is not a folder", dir)
	}
}

// TestNoBuildOutputTracked: no tracked file is an executable or over 4 MB.
// A 57 MB test binary was once committed by accident (every clone still
// carries it in history, and it filled the working tree's copy limit of
// the device machine); this catches the next one before it lands. Files
// not in git (or a checkout without git) are not checked.
func TestNoBuildOutputTracked(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	const maxSize = 4 << 20
	for _, name := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue // deleted in the working tree, not yet committed
		}
		head := make([]byte, 4)
		n, _ := io.ReadFull(f, head)
		st, err := f.Stat()
		f.Close()
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if st.Size() > maxSize {
			t.Errorf("%s is tracked and %d bytes (over %d): a build output or data that belongs elsewhere", name, st.Size(), maxSize)
		}
		if kind := executableKind(head[:n]); kind != "" {
			t.Errorf("%s is a tracked %s executable: build outputs are not committed", name, kind)
		}
	}
}

// executableKind names the executable format head starts with, or "".
func executableKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF"
	case bytes.HasPrefix(head, []byte{0xcf, 0xfa, 0xed, 0xfe}), bytes.HasPrefix(head, []byte{0xce, 0xfa, 0xed, 0xfe}):
		return "Mach-O"
	case bytes.HasPrefix(head, []byte("MZ")) && len(head) >= 4 && head[2] < 0x80:
		return "PE"
	}
	return ""
}

func TestExecutableKind(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		head []byte
		want string
	}{
		{b[:4], map[string]string{"linux": "ELF", "darwin": "Mach-O", "windows": "PE"}[runtime.GOOS]},
		{[]byte("package main"), ""},
		{[]byte("#!/usr/bin/env bash"), ""},
		{[]byte("\x7fEL"), ""},
		{nil, ""},
	} {
		if got := executableKind(c.head); got != c.want {
			t.Errorf("executableKind(%q) = %q, want %q", c.head, got, c.want)
		}
	}
}
