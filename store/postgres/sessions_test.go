package postgres

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestRevokedSessions: a revocation made through one store is seen by
// another on the same database (another process), until its expiry; then
// it is forgotten and its row removed on the next revocation.
func TestRevokedSessions(t *testing.T) {
	t.Parallel()
	dsn := pg.NewDatabase(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := testCtx(t)
	a := openDSN(t, dsn, WithClock(clock))
	b := openDSN(t, dsn, WithClock(clock))
	t0 := clock()
	if err := a.RevokeSession(ctx, "a", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := a.RevokeSession(ctx, "b", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := b.RevokeSession(ctx, "a", t0.Add(time.Hour)); err != nil { // twice, elsewhere, is fine
		t.Fatal(err)
	}
	got, err := b.RevokedSessions(ctx)
	if err != nil || len(got) != 2 || !got["a"].Equal(t0.Add(time.Hour)) || !got["b"].Equal(t0.Add(time.Minute)) {
		t.Fatalf("seen by the other store: %v, %v", got, err)
	}
	advance(2 * time.Minute)
	if got, _ := a.RevokedSessions(ctx); len(got) != 1 || !got["b"].IsZero() {
		t.Fatalf("after b expired: %v", got)
	}
	if err := b.RevokeSession(ctx, "c", clock().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := a.Pool().QueryRow(ctx, `SELECT count(*) FROM revoked_sessions`).Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("%d rows (%v): the expired one should be gone", rows, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RevokedSessions(context.Background()); err == nil {
		t.Fatal("RevokedSessions on a closed store: no error")
	}
}

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
