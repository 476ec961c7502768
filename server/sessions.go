package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
)

// DefaultSessionTTL is how long a sign-in lasts.
const DefaultSessionTTL = 7 * 24 * time.Hour

// sessions issues and checks session cookies. A cookie is
// "v2.<id>.<expiry>.<mac>": the MAC is keyed by the token, so rotating the
// token ends every session; the expiry bounds a stolen cookie; logout
// revokes the id on the server (not only in the browser).
type sessions struct {
	token string
	ttl   time.Duration
	now   func() time.Time
	// keep persists revocations so a restart does not bring a signed-out
	// cookie back to life; nil keeps them in memory only.
	keep revocations

	mu      sync.Mutex
	revoked map[string]time.Time // id → expiry, forgotten once expired
	loaded  time.Time            // when revoked was last read from keep

	refreshing atomic.Bool
}

// revocationRefresh is how often the kept revocations are read again:
// another server process sharing the database may have ended a session,
// which this one then refuses within this long.
const revocationRefresh = 2 * time.Second

// revocations is where sessions ended on the server are kept (the store).
type revocations interface {
	RevokeSession(ctx context.Context, id string, exp time.Time) error
	RevokedSessions(ctx context.Context) (map[string]time.Time, error)
}

// load reads the revocations kept from earlier runs of the server.
func (s *sessions) load(ctx context.Context, keep revocations) error {
	s.keep = keep
	got, err := keep.RevokedSessions(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loaded = s.now()
	for id, exp := range got {
		s.revoked[id] = exp
	}
	return nil
}

// refresh reads the kept revocations again once the last read is older
// than revocationRefresh. One caller reads; the others meanwhile go on
// with what is known. A failed read is retried after the same pause.
func (s *sessions) refresh() {
	if s.keep == nil {
		return
	}
	s.mu.Lock()
	stale := s.now().Sub(s.loaded) >= revocationRefresh
	s.mu.Unlock()
	if !stale || !s.refreshing.CompareAndSwap(false, true) {
		return
	}
	defer s.refreshing.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), revocationRefresh)
	defer cancel()
	got, err := s.keep.RevokedSessions(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loaded = s.now()
	if err != nil {
		return // the sessions known stay refused; the next refresh tries again
	}
	for id, exp := range got {
		s.revoked[id] = exp
	}
}

func newSessions(token string, ttl time.Duration) *sessions {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return &sessions{token: token, ttl: ttl, now: time.Now, revoked: map[string]time.Time{}}
}

func (s *sessions) mac(id string, exp int64) string {
	m := hmac.New(sha256.New, []byte(s.token))
	m.Write([]byte("switchyard session v2|" + id + "|" + strconv.FormatInt(exp, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// issue returns a new cookie value.
func (s *sessions) issue() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	exp := s.now().Add(s.ttl).Unix()
	return "v2." + id + "." + strconv.FormatInt(exp, 10) + "." + s.mac(id, exp)
}

// parse checks a cookie's MAC and expiry; it returns the session id.
func (s *sessions) parse(v string) (id string, exp time.Time, ok bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 4 || parts[0] != "v2" {
		return "", time.Time{}, false
	}
	unix, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	if !equalSecret(parts[3], s.mac(parts[1], unix)) {
		return "", time.Time{}, false
	}
	exp = time.Unix(unix, 0)
	if !s.now().Before(exp) {
		return "", time.Time{}, false
	}
	return parts[1], exp, true
}

// valid reports whether v is a live, unrevoked session.
func (s *sessions) valid(v string) bool {
	id, _, ok := s.parse(v)
	if !ok {
		return false
	}
	s.refresh()
	s.mu.Lock()
	defer s.mu.Unlock()
	_, gone := s.revoked[id]
	return !gone
}

// revoke ends the session of cookie value v, here at once and, when the
// revocations are kept, across restarts (an error says only the latter failed).
func (s *sessions) revoke(ctx context.Context, v string) error {
	id, exp, ok := s.parse(v)
	if !ok {
		return nil
	}
	s.mu.Lock()
	now := s.now()
	for k, e := range s.revoked {
		if !now.Before(e) {
			delete(s.revoked, k)
		}
	}
	s.revoked[id] = exp
	s.mu.Unlock()
	if s.keep == nil {
		return nil
	}
	return s.keep.RevokeSession(ctx, id, exp)
}

// loginLimiter rate-limits sign-in attempts per client address: a token
// bucket of loginBurst attempts refilled one per loginEvery.
type loginLimiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	now     func() time.Time
	// used is len(buckets), kept under mu and read without it: while no
	// client has spent a token (the usual case) every request's check
	// answers "not blocked" without taking mu, which all requests on all
	// cores would otherwise queue on.
	used atomic.Int64
}

// idle reports whether no client has a bucket, so none is blocked.
func (l *loginLimiter) idle() bool { return l.used.Load() == 0 }

type bucket struct {
	tokens float64
	at     time.Time
}

const (
	loginBurst      = 10
	loginEvery      = 6 * time.Second
	loginMaxClients = 10000 // bounded memory: the oldest buckets go first
)

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{buckets: map[string]*bucket{}, now: time.Now}
}

// allow takes one attempt for client (a limiterKey); when none is left it
// says how long until the next.
func (l *loginLimiter) allow(client string) (bool, time.Duration) {
	return l.check(client, true)
}

// blocked reports whether client has no attempt left, and for how long,
// without taking one: a right bearer token costs nothing, but is not even
// compared while its address is blocked.
func (l *loginLimiter) blocked(client string) (bool, time.Duration) {
	ok, wait := l.check(client, false)
	return !ok, wait
}

func (l *loginLimiter) check(client string, take bool) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[client]
	if b == nil {
		if !take {
			return true, 0 // a full bucket: nothing to keep
		}
		if len(l.buckets) >= loginMaxClients {
			l.prune(now)
		}
		b = &bucket{tokens: loginBurst, at: now}
		l.buckets[client] = b
		l.used.Store(int64(len(l.buckets)))
	}
	b.tokens = min(loginBurst, b.tokens+now.Sub(b.at).Seconds()/loginEvery.Seconds())
	b.at = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) * float64(loginEvery))
	}
	if take {
		b.tokens--
	}
	return true, 0
}

// limiterKey is the address attempts are counted by: an IPv4 address, or
// an IPv6 address's /64 (one host commonly holds a whole /64, so per
// address it could guess without limit). Anything else is kept as is.
func limiterKey(host string) string {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// prune drops full buckets (clients idle long enough), or all if none is.
func (l *loginLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()/loginEvery.Seconds() >= loginBurst {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= loginMaxClients {
		clear(l.buckets)
	}
	l.used.Store(int64(len(l.buckets)))
}

func clientHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

// frameHeaders forbid framing everywhere: an approval must not be
// clickjackable from another site.
func frameHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		// Shared, never-modified value slices under canonical keys: Set
		// would allocate one slice per header per request. (Header.Add
		// on one of them appends to a full slice, which copies it.)
		h["X-Frame-Options"] = hdrDeny
		h["Content-Security-Policy"] = hdrFrameAncestors
		h["X-Content-Type-Options"] = hdrNosniff
		// The UI may be opened with ?token= (the address serve prints):
		// no request may carry that address to anyone in a Referer.
		h["Referrer-Policy"] = hdrNoReferrer
		return next(c)
	}
}

var (
	hdrDeny           = []string{"DENY"}[:1:1]
	hdrFrameAncestors = []string{"frame-ancestors 'none'"}[:1:1]
	hdrNosniff        = []string{"nosniff"}[:1:1]
	hdrNoReferrer     = []string{"no-referrer"}[:1:1]
)
