package server

import (
	"context"
	"sync"
	"testing"
	"time"
)

// sharedRevocations is a store of revocations several servers share (as
// processes share one database).
type sharedRevocations struct {
	mu    sync.Mutex
	m     map[string]time.Time
	reads int
}

func (r *sharedRevocations) RevokeSession(_ context.Context, id string, exp time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[id] = exp
	return nil
}

func (r *sharedRevocations) RevokedSessions(context.Context) (map[string]time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	out := make(map[string]time.Time, len(r.m))
	for k, v := range r.m {
		out[k] = v
	}
	return out, nil
}

// A session ended on one server is refused by another sharing the store
// within revocationRefresh, without a restart; the store is read at most
// once per revocationRefresh, not per request.
func TestLogoutReachesOtherServers(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	keep := &sharedRevocations{m: map[string]time.Time{}}
	a, b := newSessions("tok", time.Hour), newSessions("tok", time.Hour)
	a.now, b.now = clock, clock
	ctx := context.Background()
	if err := a.load(ctx, keep); err != nil {
		t.Fatal(err)
	}
	if err := b.load(ctx, keep); err != nil {
		t.Fatal(err)
	}
	ck := a.issue()
	if !b.valid(ck) {
		t.Fatal("a session of one server is refused by the other")
	}
	if err := a.revoke(ctx, ck); err != nil {
		t.Fatal(err)
	}
	if a.valid(ck) {
		t.Fatal("the server that ended the session still accepts it")
	}
	reads := keep.reads
	for range 100 {
		b.valid(ck) // within revocationRefresh: what b knows, no read
	}
	if keep.reads != reads {
		t.Fatalf("%d reads of the store within %s", keep.reads-reads, revocationRefresh)
	}
	now = now.Add(revocationRefresh)
	if b.valid(ck) {
		t.Fatalf("the other server accepts a session ended %s ago", revocationRefresh)
	}
	if keep.reads != reads+1 {
		t.Fatalf("%d reads to refresh, want 1", keep.reads-reads)
	}
}
