package yamldir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

const flow = "name: x\ndescription: y\nnodes:\n  - id: a\n    bash: echo\n"

func TestSaveKeepsModeAndSymlinks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "real.yaml"), []byte(flow), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Skip(err)
	}
	f, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	old, saved, err := f.Save(ctx, WorkflowID("link.yaml"), Hash([]byte(flow)), []byte("name: z\n"), nil)
	if err != nil || string(old) != flow || string(saved) != "name: z\n" {
		t.Fatalf("%v %q %q", err, old, saved)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link.yaml")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
	fi, err := os.Stat(filepath.Join(dir, "real.yaml"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	// Stale base: a conflict carrying the disk text, nothing written.
	_, _, err = f.Save(ctx, WorkflowID("real.yaml"), Hash([]byte(flow)), []byte("q"), nil)
	var ce *ConflictError
	if !errors.As(err, &ce) || string(ce.Disk) != "name: z\n" {
		t.Fatalf("%v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("left behind %v", ents)
	}
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "not-yet")
	f, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := f.Create(ctx, "a/b/new.yml", []byte(flow))
	if err != nil || id != "yaml.a__b__new.yml" {
		t.Fatalf("%q %v", id, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a", "b", "new.yml")); err != nil || string(b) != flow {
		t.Fatalf("%q %v", b, err)
	}
	if _, err := f.Create(ctx, "a/b/new.yml", []byte("x")); !errors.Is(err, ErrExists) {
		t.Fatalf("%v", err)
	}
	for _, bad := range []string{"", "../x.yaml", "/abs.yaml", "a/../x.yaml", "x.json", ".h/x.yaml", "a\\b.yaml", "a//b.yaml"} {
		var pe *PathError
		if _, err := f.Create(ctx, bad, []byte(flow)); !errors.As(err, &pe) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestAbsoluteSymlinkInsideIsFollowed: a workflow file that is an
// absolute symlink to another file of the folder reads and saves through
// to its target (os.Root alone refuses absolute links).
func TestAbsoluteSymlinkInsideIsFollowed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "in.yaml"), filepath.Join(dir, "alias.yaml")); err != nil {
		t.Skip(err)
	}
	f, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.Get(ctx, WorkflowID("alias.yaml"))
	if err != nil || w.Source != flow {
		t.Fatalf("Get: %v %+v", err, w)
	}
	if _, _, err := f.Save(ctx, WorkflowID("alias.yaml"), Hash([]byte(flow)), []byte("name: z\n"), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "in.yaml")); string(b) != "name: z\n" {
		t.Errorf("the target holds %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "alias.yaml")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symlink was replaced")
	}
}
