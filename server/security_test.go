package server

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/switchyard/switchyard/engine"
)

func TestOriginChecks(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	self := v.url // http://127.0.0.1:PORT
	body := map[string]any{"graph": threeNodeGraph()}
	cases := []struct {
		name, method, path, origin string
		body                       any
		status                     int
		proxy                      []string // headers a reverse proxy adds
	}{
		{"no origin (non-browser client)", "POST", "/api/validate", "", body, 200, nil},
		{"same origin", "POST", "/api/validate", self, body, 200, nil},
		{"same origin, other case", "POST", "/api/validate", strings.ToUpper(self[:4]) + self[4:], body, 200, nil},
		{"foreign origin", "POST", "/api/validate", "http://evil.example", body, 403, nil},
		{"same host, other scheme", "POST", "/api/validate", strings.Replace(self, "http:", "https:", 1), body, 403, nil},
		{"same host, other port", "POST", "/api/validate", "http://127.0.0.1:1", body, 403, nil},
		{"null origin", "POST", "/api/validate", "null", body, 403, nil},
		{"foreign origin on PUT", "PUT", "/api/workflows/x", "http://evil.example", map[string]any{"version": 1}, 403, nil},
		{"foreign origin on DELETE", "DELETE", "/api/workflows/x", "http://evil.example", nil, 403, nil},
		{"foreign origin on login", "POST", "/login", "http://evil.example", map[string]any{"token": "x"}, 403, nil},
		{"foreign origin may read (CORS keeps the answer from it)", "GET", "/api/config", "http://evil.example", nil, 200, nil},
		// Behind a reverse proxy that terminates TLS for sy.example.
		{"proxied https origin", "POST", "/api/validate", "https://sy.example", body, 200,
			[]string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "sy.example"}},
		{"proxied, explicit default port", "POST", "/api/validate", "https://sy.example:443", body, 200,
			[]string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "sy.example"}},
		{"proxied, chain of proxies", "POST", "/api/validate", "https://sy.example", body, 200,
			[]string{"X-Forwarded-Proto", "https, http", "X-Forwarded-Host", "sy.example, internal:8080"}},
		{"proxied, foreign origin", "POST", "/api/validate", "https://evil.example", body, 403,
			[]string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "sy.example"}},
		{"proxied, http origin for an https site", "POST", "/api/validate", "http://sy.example", body, 403,
			[]string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "sy.example"}},
		{"proxy scheme only", "POST", "/api/validate", strings.Replace(self, "http:", "https:", 1), body, 200,
			[]string{"X-Forwarded-Proto", "https"}},
		{"bogus proxy scheme is ignored", "POST", "/api/validate", self, body, 200,
			[]string{"X-Forwarded-Proto", "gopher"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := tc.proxy
			if tc.origin != "" {
				hdr = append([]string{"Origin", tc.origin}, hdr...)
			}
			r := v.with(t).request(tc.method, tc.path, tc.body, hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status == 403 && r.errCode(t) != CodeForbidden {
				t.Fatalf("code %s", r.body)
			}
		})
	}

	// Websocket upgrades need the server's own origin too.
	id := createRawRun(t, v.st, engine.StatusRunning)
	_, res, err := v.dial("/api/runs/"+id+"/ws", http.Header{"Origin": {"http://evil.example"}})
	if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign-origin websocket: %v %v", err, res)
	}
	c, _, err := v.dial("/api/ws", http.Header{"Origin": {self}})
	if err != nil {
		t.Fatalf("same-origin websocket: %v", err)
	}
	c.Close()
}

func TestHostChecks(t *testing.T) {
	t.Parallel()
	loop := newEnv(t, func(o *envOpts) { o.noLLM = true })
	port := loop.url[strings.LastIndex(loop.url, ":")+1:]
	cases := []struct {
		host   string
		status int
	}{
		{"127.0.0.1:" + port, 200},
		{"localhost:" + port, 200},
		{"LOCALHOST:" + port, 200},
		{"[::1]:" + port, 200},
		{"localhost", 200},
		{"evil.example:" + port, 403}, // DNS rebinding
		{"127.0.0.1.evil.example", 403},
		{"192.168.1.10:" + port, 403},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			r := loop.with(t).request("GET", "/api/health", nil, "Host", tc.host)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
		})
	}
	// The UI is covered too: a rebinding page cannot read it either.
	if r := loop.request("GET", "/", nil, "Host", "evil.example"); r.status != http.StatusForbidden {
		t.Fatalf("UI under a foreign Host: %d", r.status)
	}

	// Loopback with a token keeps the Host check.
	tok := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken })
	if r := tok.request("GET", "/api/config", nil, "Host", "evil.example"); r.status != http.StatusForbidden {
		t.Fatalf("token on loopback, foreign Host: %d", r.status)
	}

	// Bound to all interfaces (with a token): any Host name is fine.
	open := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken; o.addr = "0.0.0.0:0" })
	if r := open.request("GET", "/api/config", nil, "Host", "switchyard.lan:8080"); r.status != http.StatusOK {
		t.Fatalf("non-loopback, any Host: %d %s", r.status, r.body)
	}
	// The server's own configured name is accepted on loopback too.
}

func TestNonLoopbackNeedsToken(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.168.1.5:80", "[::]:80", "example.com:80"} {
		_, err := New(Config{Engine: v.e, Store: v.st, Addr: addr})
		if !errors.Is(err, ErrTokenRequired) {
			t.Errorf("%s without token: %v, want ErrTokenRequired", addr, err)
		}
		if _, err := New(Config{Engine: v.e, Store: v.st, Addr: addr, Token: testToken}); err != nil {
			t.Errorf("%s with token: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:9000", "127.0.0.2:80"} {
		if _, err := New(Config{Engine: v.e, Store: v.st, Addr: addr}); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

func TestTokenAuth(t *testing.T) {
	t.Parallel()
	ui := fstest.MapFS{
		"index.html":       {Data: []byte("<html>app</html>")},
		"assets/app-1a.js": {Data: []byte("console.log(1)")},
	}
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken; o.ui = ui })
	v.token = "" // send credentials by hand

	bearer := []string{"Authorization", "Bearer " + testToken}
	cases := []struct {
		name, method, path string
		hdr                []string
		status             int
	}{
		{"API without token", "GET", "/api/workflows", nil, 401},
		{"API with wrong token", "GET", "/api/workflows", []string{"Authorization", "Bearer nope"}, 401},
		{"API with token prefix only", "GET", "/api/workflows", []string{"Authorization", "Bearer " + testToken[:len(testToken)-1]}, 401},
		{"API with token", "GET", "/api/workflows", bearer, 200},
		{"API with lower-case scheme", "GET", "/api/workflows", []string{"Authorization", "bearer " + testToken}, 200},
		{"basic auth is not bearer", "GET", "/api/workflows", []string{"Authorization", "Basic dG9rLTEyMw=="}, 401},
		{"metrics need the token", "GET", "/metrics", nil, 401},
		{"openapi needs the token", "GET", "/api/openapi.json", nil, 401},
		{"compat needs the token", "GET", "/api/default-workflow", nil, 401},
		{"unknown API path needs the token", "GET", "/api/whatever", nil, 401},
		{"health is public", "GET", "/api/health", nil, 200},
		{"auth state is public", "GET", "/api/auth", nil, 200},
		{"UI shell is public", "GET", "/", nil, 200},
		{"UI route is public", "GET", "/runs/123", nil, 200},
		{"UI assets are public", "GET", "/assets/app-1a.js", nil, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := v.with(t).request(tc.method, tc.path, nil, tc.hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status == 401 && r.errCode(t) != CodeUnauthorized {
				t.Fatalf("code %s", r.body)
			}
		})
	}

	var st authJSON
	v.must(http.StatusOK, "GET", "/api/auth", nil, &st)
	if !st.AuthRequired || st.Authenticated {
		t.Fatalf("auth state without credentials %+v", st)
	}

	// Login: a wrong token is 401, the right one sets the session cookie.
	if r := v.request("POST", "/login", map[string]any{"token": "nope"}); r.status != http.StatusUnauthorized {
		t.Fatalf("wrong login: %d", r.status)
	}
	r := v.request("POST", "/login", map[string]any{"token": testToken})
	if r.status != http.StatusOK {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == SessionCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Value == "" ||
		strings.Contains(cookie.Value, testToken) || cookie.Secure {
		t.Fatalf("session cookie %+v", cookie)
	}
	// Through a reverse proxy that terminates TLS the cookie is Secure.
	viaProxy := v.request("POST", "/login", map[string]any{"token": testToken}, "X-Forwarded-Proto", "https")
	if sc := viaProxy.header.Get("Set-Cookie"); viaProxy.status != http.StatusOK || !strings.Contains(sc, "Secure") {
		t.Fatalf("login through an https proxy: %d %q", viaProxy.status, sc)
	}
	ck := []string{"Cookie", SessionCookie + "=" + cookie.Value}
	if r := v.request("GET", "/api/workflows", nil, ck...); r.status != http.StatusOK {
		t.Fatalf("with cookie: %d", r.status)
	}
	v.must(http.StatusOK, "GET", "/api/auth", nil, nil)
	if r := v.request("GET", "/api/auth", nil, ck...); !strings.Contains(string(r.body), `"authenticated":true`) {
		t.Fatalf("auth with cookie: %s", r.body)
	}
	if r := v.request("GET", "/api/workflows", nil, "Cookie", SessionCookie+"=forged"); r.status != http.StatusUnauthorized {
		t.Fatalf("forged cookie: %d", r.status)
	}
	if r := v.request("POST", "/logout", nil); r.status != http.StatusNoContent || !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("logout: %d %v", r.status, r.header)
	}

	// Websockets: bearer or cookie, else 401.
	id := createRawRun(t, v.st, engine.StatusRunning)
	if _, res, err := v.dial("/api/runs/"+id+"/ws", nil); err == nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("websocket without token: %v %v", err, res)
	}
	for _, h := range []http.Header{{"Authorization": {"Bearer " + testToken}}, {"Cookie": {SessionCookie + "=" + cookie.Value}}} {
		c, _, err := v.dial("/api/ws", h)
		if err != nil {
			t.Fatalf("websocket with %v: %v", h, err)
		}
		c.Close()
	}
}

// TestLoginWithoutToken: with no token configured, login is a no-op.
func TestLoginWithoutToken(t *testing.T) {
	t.Parallel()
	v := newEnv(t, func(o *envOpts) { o.noLLM = true })
	var st authJSON
	v.must(http.StatusOK, "POST", "/login", map[string]any{"token": "anything"}, &st)
	if st.AuthRequired || !st.Authenticated {
		t.Fatalf("%+v", st)
	}
	v.must(http.StatusOK, "GET", "/api/auth", nil, &st)
	if st.AuthRequired || !st.Authenticated {
		t.Fatalf("%+v", st)
	}
}

func TestEqualSecret(t *testing.T) {
	t.Parallel()
	if !equalSecret("abc", "abc") || equalSecret("abc", "abd") || equalSecret("abc", "abcd") || equalSecret("", "x") {
		t.Fatal("equalSecret is wrong")
	}
}
