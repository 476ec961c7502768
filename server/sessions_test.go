package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/engine"
)

func loginCookie(t *testing.T, v *env, token string, hdr ...string) string {
	t.Helper()
	r := v.request("POST", "/login", map[string]any{"token": token}, hdr...)
	if r.status != http.StatusOK {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == SessionCookie {
			if c.MaxAge != int(DefaultSessionTTL/time.Second) {
				t.Errorf("cookie Max-Age %d, want %d", c.MaxAge, int(DefaultSessionTTL/time.Second))
			}
			return c.Value
		}
	}
	t.Fatal("login set no session cookie")
	return ""
}

// Logout ends a session on the server: a copy of the cookie kept elsewhere
// stops working too, while other sessions go on.
func TestLogoutRevokesTheSession(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken })
	v.token = ""
	a, b := loginCookie(t, v, testToken), loginCookie(t, v, testToken)
	if a == b {
		t.Fatal("two sign-ins share one session")
	}
	for _, ck := range []string{a, b} {
		if r := v.request("GET", "/api/workflows", nil, "Cookie", SessionCookie+"="+ck); r.status != http.StatusOK {
			t.Fatalf("signed in: %d", r.status)
		}
	}
	if r := v.request("POST", "/api/logout", nil, "Cookie", SessionCookie+"="+a); r.status != http.StatusNoContent {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	if r := v.request("GET", "/api/workflows", nil, "Cookie", SessionCookie+"="+a); r.status != http.StatusUnauthorized {
		t.Fatalf("a logged-out session still works: %d", r.status)
	}
	if r := v.request("GET", "/api/workflows", nil, "Cookie", SessionCookie+"="+b); r.status != http.StatusOK {
		t.Fatalf("another session ended with the first: %d", r.status)
	}
}

// A logout holds across a restart: the server that starts next on the same
// database refuses the signed-out cookie and still accepts the others.
func TestLogoutSurvivesRestart(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken })
	v.token = ""
	a, b := loginCookie(t, v, testToken), loginCookie(t, v, testToken)
	if r := v.request("POST", "/api/logout", nil, "Cookie", SessionCookie+"="+a); r.status != http.StatusNoContent {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	// The next server: a new Server (its memory empty) on the same store.
	next, err := New(Config{Engine: v.e, Store: v.st, Addr: "127.0.0.1:0", Token: testToken, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	for ck, want := range map[string]int{a: http.StatusUnauthorized, b: http.StatusOK} {
		req := httptest.NewRequest("GET", "/api/workflows", nil)
		req.Host = "127.0.0.1"
		req.AddCookie(&http.Cookie{Name: SessionCookie, Value: ck})
		rec := httptest.NewRecorder()
		next.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("after a restart, cookie %s…: %d, want %d", ck[:12], rec.Code, want)
		}
	}
}

// Sessions expire, and a token change ends them all.
func TestSessionExpiryAndTokenRotation(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	s := newSessions("tok-1", time.Hour)
	s.now = func() time.Time { return now }
	ck := s.issue()
	if !s.valid(ck) {
		t.Fatal("a fresh session is not valid")
	}
	if newSessions("tok-2", time.Hour).valid(ck) {
		t.Error("a session outlived a token change")
	}
	forged := strings.Replace(ck, ".", ".x", 1)
	if s.valid(forged) {
		t.Error("a forged session is valid")
	}
	now = now.Add(59 * time.Minute)
	if !s.valid(ck) {
		t.Error("a session ended before its time")
	}
	now = now.Add(2 * time.Minute)
	if s.valid(ck) {
		t.Error("an expired session is valid")
	}
}

// Sign-in attempts are rate-limited per client: a 429 with Retry-After
// once the burst is spent, even for the right token.
func TestLoginIsRateLimited(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken })
	v.token = ""
	for i := 0; i < loginBurst; i++ {
		if r := v.request("POST", "/login", map[string]any{"token": "guess"}); r.status != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i, r.status)
		}
	}
	r := v.request("POST", "/login", map[string]any{"token": testToken})
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || r.errCode(t) != CodeRateLimited {
		t.Fatalf("after %d attempts: %d %q %s", loginBurst, r.status, r.header.Get("Retry-After"), r.body)
	}
}

// Every response forbids framing, so approvals cannot be clickjacked.
func TestResponsesForbidFraming(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	for _, path := range []string{"/", "/api/health", "/api/workflows", "/api/nothing"} {
		r := v.request("GET", path, nil)
		if r.header.Get("X-Frame-Options") != "DENY" || !strings.Contains(r.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s: X-Frame-Options %q, CSP %q", path, r.header.Get("X-Frame-Options"), r.header.Get("Content-Security-Policy"))
		}
	}
}

// GET /events answers a page at a time (1,000 by default, 10,000 at most);
// a client reads on from the last seq of a full page.
func TestEventsArePaged(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	const n = DefaultEventsPage + 500
	id := newID()
	now := time.Now().UTC()
	evs := make([]*engine.Event, n)
	for i := range evs {
		evs[i] = &engine.Event{Seq: int64(i + 1), RunID: id, NodeID: "x", Type: engine.EvOutput, Content: "line", Timestamp: now}
	}
	r := &engine.Run{ID: id, Kind: engine.KindGraph, Definition: json.RawMessage(`{"nodes":[],"edges":[]}`),
		Status: engine.StatusRunning, PendingApprovals: []engine.PendingApproval{}, CreatedAt: now, UpdatedAt: now}
	if err := v.st.CreateRun(context.Background(), r, nil, evs); err != nil {
		t.Fatal(err)
	}
	var first, rest []engine.Event
	v.must(http.StatusOK, "GET", "/api/runs/"+id+"/events", nil, &first)
	if len(first) != DefaultEventsPage || first[len(first)-1].Seq != DefaultEventsPage {
		t.Fatalf("first page: %d events", len(first))
	}
	v.must(http.StatusOK, "GET", fmt.Sprintf("/api/runs/%s/events?after=%d", id, first[len(first)-1].Seq), nil, &rest)
	if len(rest) != 500 || rest[0].Seq != DefaultEventsPage+1 {
		t.Fatalf("second page: %d events", len(rest))
	}
	if r := v.request("GET", fmt.Sprintf("/api/runs/%s/events?limit=%d", id, MaxEventsPage+1), nil); r.status != http.StatusBadRequest {
		t.Fatalf("limit over the maximum: %d", r.status)
	}
}
