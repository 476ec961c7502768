package server

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fromAddr sends a request from the local address from (127.0.0.0/8 on
// Linux all reach loopback) with the given headers; "Host" sets the Host.
func fromAddr(t *testing.T, from, method, url string, body string, hdr ...string) (int, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestTrustedProxy: behind a reverse proxy (serve --trusted-proxy) the
// client may be opened under any name: the Host check is the proxy's, the
// origin check compares with X-Forwarded-Host and -Proto, and sign-in
// attempts are counted by the X-Forwarded-For client. Others get none of it.
func TestTrustedProxy(t *testing.T) {
	t.Parallel()
	trusted, err := ParseTrustedProxies([]string{"127.0.0.1/32, 10.0.0.0/8", "::1"})
	if err != nil || len(trusted) != 3 {
		t.Fatalf("ParseTrustedProxies: %v %v", trusted, err)
	}
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = testToken; o.trustedProxies = trusted })
	auth := []string{"Authorization", "Bearer " + testToken}
	body := `{"graph":{"nodes":[],"edges":[]}}`

	// Vite without changeOrigin, opened as http://devbox.lan:5173: the
	// browser's Host reaches the server.
	for _, from := range []string{"127.0.0.1", "127.0.0.2"} {
		status, out := fromAddr(t, from, "GET", v.url+"/api/config", "", append(auth, "Host", "devbox.lan:5173", "X-Forwarded-Host", "devbox.lan:5173")...)
		want := http.StatusOK
		if from != "127.0.0.1" {
			want = http.StatusForbidden // not a trusted proxy: a DNS-rebinding page, for all we know
		}
		if status != want {
			t.Errorf("GET under a LAN name from %s: %d, want %d: %s", from, status, want, out)
		}
	}
	// nginx (proxy_set_header Host $proxy_host) in front of https://sy.example.com.
	status, out := fromAddr(t, "127.0.0.1", "POST", v.url+"/api/validate", body, append(auth, "Origin", "https://sy.example.com",
		"X-Forwarded-Host", "sy.example.com", "X-Forwarded-Proto", "https")...)
	if status != http.StatusOK {
		t.Errorf("POST through nginx: %d %s", status, out)
	}
	// A foreign origin stays foreign through the proxy.
	status, _ = fromAddr(t, "127.0.0.1", "POST", v.url+"/api/validate", body, append(auth, "Origin", "https://evil.example",
		"X-Forwarded-Host", "sy.example.com", "X-Forwarded-Proto", "https")...)
	if status != http.StatusForbidden {
		t.Errorf("POST from a foreign origin through the proxy: %d", status)
	}

	// Wrong bearer tokens are counted per forwarded client, not per proxy.
	frozen := time.Now()
	v.srv.logins.now = func() time.Time { return frozen }
	guess := func(xff string) int {
		s, _ := fromAddr(t, "127.0.0.1", "GET", v.url+"/api/config", "", "Authorization", "Bearer wrong", "X-Forwarded-For", xff)
		return s
	}
	for i := 0; i < loginBurst; i++ {
		if s := guess("198.51.100.9, 203.0.113.5"); s != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, s)
		}
	}
	if s := guess("203.0.113.5"); s != http.StatusTooManyRequests {
		t.Errorf("guess %d from one client: %d, want 429", loginBurst+1, s)
	}
	if s := guess("203.0.113.6"); s != http.StatusUnauthorized {
		t.Errorf("another client behind the same proxy: %d, want 401", s)
	}
	// The proxy's own address (and a trusted hop) is not the client.
	if s := guess("203.0.113.5, 10.1.2.3"); s != http.StatusTooManyRequests {
		t.Errorf("through two proxies: %d, want 429", s)
	}

	// Trusted proxies need a token: their headers lift the Host check.
	if _, err := New(Config{Engine: v.e, Store: v.st, Addr: "127.0.0.1:0", TrustedProxies: trusted}); err == nil {
		t.Error("trusted proxies without a token accepted")
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.lan", "1.2.3"} {
		if _, err := ParseTrustedProxies([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseTrustedProxies(%q): %v", bad, err)
		}
	}
}
