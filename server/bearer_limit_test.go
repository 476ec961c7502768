package server

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// testToken is a token strong enough for CheckToken.
const testToken = "tok-0123456789abcdef-0123456789"

// bearerGet sends GET path with a bearer token from the local address
// from (a 127.0.0.0/8 address: Linux routes all of them to loopback).
func bearerGet(t *testing.T, url, from, token string) *http.Response {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	req, _ := http.NewRequest("GET", url+"/api/config", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// TestBearerGuessesAreThrottled: wrong bearer tokens count against the
// sign-in limiter of the client's address. Once its burst is spent, every
// bearer request from that address (the right token too: else a guesser
// would still learn which guess is right) gets 429 with Retry-After, while
// other addresses and signed-in requests go on.
func TestBearerGuessesAreThrottled(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken })
	frozen := time.Now()
	v.srv.logins.now = func() time.Time { return frozen } // no refill while the test runs, however slow
	counts := map[int]int{}
	for i := 0; i < 300; i++ {
		counts[bearerGet(t, v.url, "127.0.0.1", "guess-"+strings.Repeat("x", i%7)).StatusCode]++
	}
	if counts[http.StatusUnauthorized] != loginBurst || counts[http.StatusTooManyRequests] != 300-loginBurst {
		t.Fatalf("300 wrong tokens: %v, want %d × 401 then 429", counts, loginBurst)
	}
	res := bearerGet(t, v.url, "127.0.0.1", testToken)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("the right token from the throttled address: %d (Retry-After %q)", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := bearerGet(t, v.url, "127.0.0.2", testToken); res.StatusCode != http.StatusOK {
		t.Fatalf("another address: %d", res.StatusCode)
	}
	// Right tokens never use the burst up.
	for i := 0; i < 3*loginBurst; i++ {
		if res := bearerGet(t, v.url, "127.0.0.3", testToken); res.StatusCode != http.StatusOK {
			t.Fatalf("right token, request %d: %d", i, res.StatusCode)
		}
	}
	// Time refills the bucket.
	frozen = frozen.Add(loginEvery + time.Second)
	if res := bearerGet(t, v.url, "127.0.0.1", testToken); res.StatusCode != http.StatusOK {
		t.Fatalf("after a refill: %d", res.StatusCode)
	}
}

// TestLimiterKeysIPv6By64: an IPv6 client holds a whole /64, so its
// attempts are counted per /64; an IPv4-mapped address is its IPv4 one.
func TestLimiterKeysIPv6By64(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"fe80::1%eth0", "fe80::2"},
	} {
		if limiterKey(tc.a) != limiterKey(tc.b) {
			t.Errorf("%s and %s: keys %q and %q, want one", tc.a, tc.b, limiterKey(tc.a), limiterKey(tc.b))
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},
		{"192.0.2.7", "192.0.2.8"},
	} {
		if limiterKey(tc.a) == limiterKey(tc.b) {
			t.Errorf("%s and %s share the key %q", tc.a, tc.b, limiterKey(tc.a))
		}
	}
}

// TestWeakTokensRefused: a given token needs about 128 bits (16 bytes) of
// entropy; a one-character token file was accepted.
func TestWeakTokensRefused(t *testing.T) {
	t.Parallel()
	for _, weak := range []string{"t", "tok", "s3cret", "e2e-secret-token", "0123456789abcdef", strings.Repeat("a", 64), strings.Repeat("ab", 40)} {
		if err := CheckToken(weak); err == nil {
			t.Errorf("CheckToken(%q) accepted", weak)
		}
	}
	for _, strong := range []string{testToken, "0123456789abcdef0123456789abcdef", "3q2-7Hk9_QpZ1xYvB0aLmN", "f47ac10b-58cc-4372-a567-0e02b2c3d479"} {
		if err := CheckToken(strong); err != nil {
			t.Errorf("CheckToken(%q): %v", strong, err)
		}
	}
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	if _, err := New(Config{Engine: v.e, Store: v.st, Addr: "127.0.0.1:0", Token: "x"}); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("New with a one-character token: %v", err)
	}
}

// TestLimiterIdleUntilAFailure: the limiter answers "idle" (nobody can be
// blocked, so requests skip it) until a client spends a token, and again
// once every bucket has refilled and been pruned.
func TestLimiterIdleUntilAFailure(t *testing.T) {
	t.Parallel()
	l := newLoginLimiter()
	now := time.Now()
	l.now = func() time.Time { return now }
	if !l.idle() {
		t.Fatal("a new limiter is not idle")
	}
	if blocked, _ := l.blocked("10.0.0.1"); blocked || !l.idle() {
		t.Fatalf("a check made the limiter busy (blocked %v)", blocked)
	}
	l.allow("10.0.0.1")
	if l.idle() {
		t.Fatal("idle after a failed attempt")
	}
	now = now.Add(loginBurst * loginEvery)
	l.mu.Lock()
	l.prune(now)
	l.mu.Unlock()
	if !l.idle() {
		t.Fatal("not idle once every bucket refilled and was pruned")
	}
}
