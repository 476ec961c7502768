package sqlite

import (
	"path/filepath"
	"testing"
	"time"
)

// TestRevokedSessions: revocations are kept across reopening until their
// expiry, then forgotten.
func TestRevokedSessions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "switchyard.db")
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ctx := testCtx(t)
	s, err := Open(ctx, path, WithLogger(testLogger(t)), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeSession(ctx, "a", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeSession(ctx, "b", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeSession(ctx, "a", now.Add(time.Hour)); err != nil { // twice is fine
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openAt(t, path, WithClock(clock))
	got, err := s.RevokedSessions(ctx)
	if err != nil || len(got) != 2 || !got["a"].Equal(now.Add(time.Hour)) || !got["b"].Equal(now.Add(time.Minute)) {
		t.Fatalf("after reopening: %v, %v", got, err)
	}
	now = now.Add(2 * time.Minute)
	if got, _ := s.RevokedSessions(ctx); len(got) != 1 || got["b"] != (time.Time{}) {
		t.Fatalf("after b expired: %v", got)
	}
	if err := s.RevokeSession(ctx, "c", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := s.rdb.QueryRow(`SELECT count(*) FROM revoked_sessions`).Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("%d rows (%v): the expired one should be gone", rows, err)
	}
}
