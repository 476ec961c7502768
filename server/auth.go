package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// SessionCookie is the cookie POST /login sets.
const SessionCookie = "switchyard_session"

// equalSecret compares in constant time (hashing first, so the length
// of the secret does not leak either).
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// authenticated reports whether r carries the token (bearer) or a valid
// session cookie. Without a configured token everyone is.
func (s *Server) authenticated(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	if tok, ok := bearerToken(r); ok && equalSecret(tok, s.cfg.Token) {
		return true
	}
	if ck, err := r.Cookie(SessionCookie); err == nil && s.sessions.valid(ck.Value) {
		return true
	}
	return false
}

// needsAuth lists what the token protects: the API, websockets and
// metrics. The UI shell stays public so the sign-in page can load.
func needsAuth(path string) bool {
	switch path {
	case "/api/health", "/api/auth", "/login", "/logout", "/api/logout":
		return false
	}
	return strings.HasPrefix(path, "/api/") || path == "/metrics"
}

// ParseTrustedProxies reads --trusted-proxy values: CIDR prefixes or bare
// addresses, each value possibly a comma-separated list.
func ParseTrustedProxies(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			if p, err := netip.ParsePrefix(f); err == nil {
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: want an address or a CIDR prefix such as 10.0.0.0/8", f)
			}
			a = a.WithZone("").Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}

// trusted reports whether ip (an address, maybe IPv4-mapped) is a trusted
// proxy.
func (s *Server) trusted(ip string) bool {
	if len(s.cfg.TrustedProxies) == 0 {
		return false
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.WithZone("").Unmap()
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// viaTrustedProxy reports whether r arrived from a trusted proxy.
func (s *Server) viaTrustedProxy(r *http.Request) bool { return s.trusted(clientHost(r)) }

// clientIP is the address of the client a request comes from: the peer,
// or behind trusted proxies the last address of X-Forwarded-For that is
// not one of them (the ones before it could be made up by the client).
func (s *Server) clientIP(r *http.Request) string {
	peer := clientHost(r)
	if !s.trusted(peer) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h := strings.TrimSpace(hops[i])
		if _, err := netip.ParseAddr(h); err != nil {
			break // not an address: trust nothing further left
		}
		if !s.trusted(h) {
			return h
		}
		peer = h
	}
	return peer
}

// bearerToken returns the token of an Authorization: Bearer header.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

func (s *Server) requireAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Token == "" || !needsAuth(c.Request().URL.Path) {
			return next(c)
		}
		r := c.Request()
		// Bearer guesses count against the sign-in limiter of the client's
		// address, as POST /login attempts do. While it is spent, no bearer
		// token is even compared: a guesser must not learn which is right.
		// While no client has failed (the limiter is idle) nobody is
		// blocked: the common request neither works out its client's key
		// nor takes the limiter's lock.
		_, bearer := bearerToken(r)
		if bearer && !s.logins.idle() {
			if blocked, wait := s.logins.blocked(limiterKey(s.clientIP(r))); blocked {
				return s.tooManyAttempts(c, wait)
			}
		}
		if !s.authenticated(r) {
			if bearer {
				s.logins.allow(limiterKey(s.clientIP(r)))
			}
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="switchyard"`)
			// Answer at once, without reading a body the client may be
			// sending slowly, and close the connection after the 401. An
			// expired read deadline makes sure of it: net/http would
			// otherwise read (drain) up to 256 KiB of the body after the
			// answer, at whatever pace the client sends it.
			c.Response().Header().Set("Connection", "close")
			_ = http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Now())
			return newErr(http.StatusUnauthorized, CodeUnauthorized,
				"authentication required: send Authorization: Bearer <token> or sign in")
		}
		return next(c)
	}
}

// tooManyAttempts answers 429 with Retry-After, closing the connection
// without reading a body (as the 401 does).
func (s *Server) tooManyAttempts(c echo.Context, wait time.Duration) error {
	secs := int(wait/time.Second) + 1
	h := c.Response().Header()
	h.Set("Retry-After", strconv.Itoa(secs))
	h.Set("Connection", "close")
	_ = http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Now())
	return newErr(http.StatusTooManyRequests, CodeRateLimited, "too many failed sign-in attempts from this address; try again in %d s", secs)
}

// checkHost refuses requests for a Host that is not this server while it
// listens on loopback only: a DNS-rebinding page would otherwise reach the
// API under its own name. A server exposed on the network has a token.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// Through a trusted proxy any name may reach the server: the proxy
		// decides which do (and a token is required then).
		if s.loopback && !s.viaTrustedProxy(c.Request()) {
			h := hostOnly(c.Request().Host)
			if !s.hosts[h] {
				return newErr(http.StatusForbidden, CodeForbidden,
					"host %q is not this server's name (use localhost or 127.0.0.1, or behind a reverse proxy serve --trusted-proxy)", truncate(c.Request().Host, 100))
			}
		}
		return next(c)
	}
}

// hostOnly lowercases a Host header and strips the port and brackets.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}

// checkOrigin accepts state-changing requests and websocket upgrades only
// from the server's own origin; requests without Origin (non-browser
// clients) pass.
func (s *Server) checkOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if (isStateChanging(r.Method) || isUpgrade(r)) && !sameOrigin(r) {
			return newErr(http.StatusForbidden, CodeForbidden,
				"cross-origin request refused: Origin %q is not this server", truncate(r.Header.Get("Origin"), 100))
		}
		return next(c)
	}
}

func isStateChanging(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
		return true
	}
	return false
}

// isUpgrade reports whether r asks for a websocket, on any route: the
// origin check errs on the side of checking (deadlines only trust real
// handshakes, see isWebsocketHandshake).
func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// sameOrigin reports whether the Origin header is absent or equals the
// request's own scheme://host.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	// Behind a reverse proxy that terminates TLS the browser's origin is
	// https://public-host while the request arrives as plain http, maybe
	// with the proxy's own Host: the proxy says what the browser used.
	// Trusting these headers costs no CSRF protection: a page on another
	// origin cannot set them (custom headers need a CORS preflight, which
	// this server never grants, and websocket upgrades carry none).
	if p := forwarded(r, "X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	if h := forwarded(r, "X-Forwarded-Host"); h != "" {
		host = h
	}
	if !strings.EqualFold(u.Scheme, scheme) {
		return false
	}
	return stripDefaultPort(strings.ToLower(u.Host), scheme) == stripDefaultPort(strings.ToLower(host), scheme)
}

// viaHTTPS reports whether the browser reached the server over TLS, here or
// at a reverse proxy in front of it: the session cookie is then Secure.
func viaHTTPS(r *http.Request) bool {
	return r.TLS != nil || forwarded(r, "X-Forwarded-Proto") == "https"
}

// forwarded returns the first (client-side) value of a proxy header.
func forwarded(r *http.Request, name string) string {
	v, _, _ := strings.Cut(r.Header.Get(name), ",")
	return strings.ToLower(strings.TrimSpace(v))
}

func stripDefaultPort(host, scheme string) string {
	if scheme == "http" {
		return strings.TrimSuffix(host, ":80")
	}
	return strings.TrimSuffix(host, ":443")
}

type loginRequest struct {
	Token string `json:"token"`
}

// login checks the token and sets the session cookie (HttpOnly,
// SameSite=Strict).
func (s *Server) login(c echo.Context) error {
	if ok, wait := s.logins.allow(limiterKey(s.clientIP(c.Request()))); !ok {
		secs := int(wait/time.Second) + 1
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return newErr(http.StatusTooManyRequests, CodeRateLimited, "too many sign-in attempts; try again in %d s", secs)
	}
	var req loginRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if s.cfg.Token == "" {
		return c.JSON(http.StatusOK, authJSON{AuthRequired: false, Authenticated: true})
	}
	if !equalSecret(req.Token, s.cfg.Token) {
		return newErr(http.StatusUnauthorized, CodeUnauthorized, "that token was not accepted")
	}
	c.SetCookie(&http.Cookie{
		Name: SessionCookie, Value: s.sessions.issue(), Path: "/", MaxAge: int(s.sessions.ttl / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: viaHTTPS(c.Request()),
	})
	return c.JSON(http.StatusOK, authJSON{AuthRequired: true, Authenticated: true})
}

// logout ends the session on the server too: the cookie stops working
// even if a copy of it survives the browser's.
func (s *Server) logout(c echo.Context) error {
	if ck, err := c.Request().Cookie(SessionCookie); err == nil && s.sessions != nil {
		if err := s.sessions.revoke(c.Request().Context(), ck.Value); err != nil {
			// Ended here; only a restart could bring it back. Say so.
			s.log.Warn("logout: could not store the revocation", "err", err)
		}
	}
	c.SetCookie(&http.Cookie{
		Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: viaHTTPS(c.Request()),
	})
	return c.NoContent(http.StatusNoContent)
}

type authJSON struct {
	AuthRequired  bool `json:"authRequired"`
	Authenticated bool `json:"authenticated"`
}

func (s *Server) authStatus(c echo.Context) error {
	return c.JSON(http.StatusOK, authJSON{AuthRequired: s.cfg.Token != "", Authenticated: s.authenticated(c.Request())})
}

// MinTokenBits is the entropy a given token must have (16 bytes): 32 hex
// digits or 22 base64 characters of a random source.
const MinTokenBits = 128

// CheckToken refuses a token too weak to stand guessing: fewer than
// MinTokenBits by a generous estimate (length × bits per character of the
// character classes it uses, hex digits counted as 4 bits), or fewer than 8
// distinct characters.
func CheckToken(token string) error {
	bits, distinct := tokenBits(token)
	if bits < MinTokenBits || distinct < 8 {
		return fmt.Errorf("the token is too weak (about %d bits, %d distinct characters; need %d bits: 16 random bytes, e.g. `openssl rand -hex 16`): %w",
			int(bits), distinct, MinTokenBits, ErrWeakToken)
	}
	return nil
}

// ErrWeakToken is returned by CheckToken and New for a guessable token.
var ErrWeakToken = errors.New("use a random token of at least 32 hex digits, or let serve make one")

// tokenBits estimates a token's entropy from its length and the classes
// of characters it uses; it overrates non-random tokens, never random ones.
func tokenBits(token string) (bits float64, distinct int) {
	var lower, upper, digit, other, hexOnly = false, false, false, false, true
	seen := map[rune]bool{}
	n := 0
	for _, r := range token {
		n++
		seen[r] = true
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		default:
			other = true
		}
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			hexOnly = false
		}
	}
	alphabet := 0
	for _, c := range []struct {
		used bool
		size int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 33}} {
		if c.used {
			alphabet += c.size
		}
	}
	if hexOnly && !(lower && upper) {
		alphabet = 16
	}
	if alphabet < 2 {
		return 0, len(seen)
	}
	return float64(n) * math.Log2(float64(alphabet)), len(seen)
}
