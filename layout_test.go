package switchyard

import (
	"io/fs"
	"os"
	"path/filepath"
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
