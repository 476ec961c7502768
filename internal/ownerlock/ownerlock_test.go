package ownerlock

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func register(t *testing.T, dir string) *Registry {
	t.Helper()
	r, err := Register(dir, NewOwner())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestDeadOwners: an owner whose lock is free is dead, one holding it is
// not, an owner of another host never is, and a forgotten owner is gone.
func TestDeadOwners(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "switchyard.db.owners")
	a, b, c := register(t, dir), register(t, dir), register(t, dir)
	if d := a.Dead(); len(d) != 0 {
		t.Fatalf("Dead() = %v with every owner alive", d)
	}
	// b dies: its file stays, its lock goes (as when the kernel closes
	// the files of a killed process).
	b.f.Close()
	b.f = nil
	// An owner of another host (a shared disk): its lock proves nothing.
	other := `{"owner":"elsewhere/1/x","host":"elsewhere","pid":1}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, fileName("elsewhere/1/x")), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := a.Dead(); !slices.Equal(d, []string{b.Owner()}) {
		t.Fatalf("Dead() = %v, want [%s]", d, b.Owner())
	}
	if err := a.Forget(c.Owner()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, fileName(c.Owner()))); err != nil {
		t.Errorf("Forget removed a live owner's file: %v", err)
	}
	if err := a.Forget(b.Owner()); err != nil {
		t.Fatal(err)
	}
	if d := c.Dead(); len(d) != 0 {
		t.Errorf("Dead() = %v after the dead owner was forgotten", d)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, fileName(a.Owner()))); !os.IsNotExist(err) {
		t.Errorf("Close left the lock file: %v", err)
	}
}
