package postgres

import (
	"testing"
)

// TestSynchronousCommit: the store reports the server's durability setting
// (serve warns when it is off) and leaves it as it found it.
func TestSynchronousCommit(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	var want string
	mustOK(t, s.Pool().QueryRow(testCtx(t), `SHOW synchronous_commit`).Scan(&want), "SHOW synchronous_commit")
	if got := s.SynchronousCommit(); got == "" || got != want {
		t.Fatalf("SynchronousCommit() = %q, the server says %q", got, want)
	}
}
