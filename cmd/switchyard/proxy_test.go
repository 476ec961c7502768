package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestServeTrustedProxy: behind a trusted proxy the UI may be opened under
// a LAN name (a 403 on every request before), and a POST whose Host the
// proxy rewrote passes the origin check with X-Forwarded-Host.
func TestServeTrustedProxy(t *testing.T) {
	t.Parallel()
	const token = "tk-proxy-0123456789abcdefghij"
	p := startServe(t, []string{"SWITCHYARD_TOKEN=" + token}, "--addr", "127.0.0.1:0", "--data", t.TempDir(),
		"--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "192.0.2.1,127.0.0.1")
	do := func(method, path string, hdr ...string) int {
		req, _ := http.NewRequest(method, p.url+path, strings.NewReader(`{"graph":{"nodes":[],"edges":[]}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				req.Host = hdr[i+1]
			} else {
				req.Header.Set(hdr[i], hdr[i+1])
			}
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := do("GET", "/api/config", "Host", "devbox.lan:5173"); s != http.StatusOK {
		t.Errorf("GET under a LAN name through the proxy: %d", s)
	}
	if s := do("POST", "/api/validate", "Origin", "http://devbox.lan:5173", "X-Forwarded-Host", "devbox.lan:5173"); s != http.StatusOK {
		t.Errorf("POST with a rewritten Host and X-Forwarded-Host: %d", s)
	}
	if s := do("POST", "/api/validate", "Origin", "http://evil.example"); s != http.StatusForbidden {
		t.Errorf("POST from a foreign origin: %d", s)
	}
	p.stop(t)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trusted-proxy", "10.0.0.0/99"}, `--trusted-proxy: trusted proxy "10.0.0.0/99"`},
		{[]string{"--trusted-proxy", "127.0.0.1", "--no-token"}, "--trusted-proxy needs a token"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, binary, append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, tc.args...)...)
		cmd.Env = append(os.Environ(), "SWITCHYARD_TOKEN=", "SWITCHYARD_TOKEN_FILE=")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		_ = cmd.Run()
		cancel()
		if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want exit %d naming %q", tc.args, code, errb.String(), exitUsage, tc.want)
		}
	}
}
