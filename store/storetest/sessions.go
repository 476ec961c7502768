package storetest

import (
	"sync"
	"testing"
	"time"
)

var sessionsTests = []test{
	{"RevokedUntilExpiry", testRevokedSessions},
}

// testRevokedSessions: a revocation made through one store is seen by
// another on the same database (after a restart, or by another process),
// until its expiry; then it is forgotten.
func testRevokedSessions(t *testing.T, open Open) {
	ctx := ctxT(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	a := open(t, Options{Now: clock})
	b := open(t, Options{Now: clock, Share: a})
	t0 := clock()
	must(t, a.RevokeSession(ctx, "a", t0.Add(time.Hour)), "revoke a")
	must(t, a.RevokeSession(ctx, "b", t0.Add(time.Minute)), "revoke b")
	must(t, b.RevokeSession(ctx, "a", t0.Add(time.Hour)), "revoke a twice, elsewhere") // fine
	got, err := b.RevokedSessions(ctx)
	if err != nil || len(got) != 2 || !got["a"].Equal(t0.Add(time.Hour)) || !got["b"].Equal(t0.Add(time.Minute)) {
		t.Fatalf("seen by the other store: %v, %v", got, err)
	}
	advance(2 * time.Minute)
	if got, _ := a.RevokedSessions(ctx); len(got) != 1 || !got["b"].IsZero() {
		t.Fatalf("after b expired: %v", got)
	}
	must(t, b.RevokeSession(ctx, "c", clock().Add(time.Hour)), "revoke c")
	if got, _ := a.RevokedSessions(ctx); len(got) != 2 || got["c"].IsZero() {
		t.Fatalf("after c: %v", got)
	}
}
