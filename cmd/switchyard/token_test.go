package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The token can come from a file, so it never sits in the process's
// arguments; --token still works but warns that every local process can
// read it from /proc/PID/cmdline.
func TestServeTokenFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("tk-from-file-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, nil, "--addr", "0.0.0.0:0", "--data", t.TempDir(), "--token-file", file)
	p.url = strings.Replace(strings.Replace(p.url, "0.0.0.0", "127.0.0.1", 1), "[::]", "127.0.0.1", 1)
	if status, _, _ := p.get(t, "/api/config", ""); status != http.StatusUnauthorized {
		t.Fatalf("without token: %d", status)
	}
	if status, _, body := p.get(t, "/api/config", "tk-from-file-0123456789abcdef"); status != http.StatusOK {
		t.Fatalf("with the file's token: %d %s", status, body)
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "cmdline"))
	if err == nil && strings.Contains(string(cmdline), "tk-from-file-0123456789abcdef") {
		t.Errorf("the token is in the process's arguments: %q", cmdline)
	}
	if strings.Contains(p.log(), "warning: --token") {
		t.Errorf("--token-file warned about --token:\n%s", p.log())
	}
	p.stop(t)

	q := startServe(t, nil, "--data", t.TempDir(), "--token", "tk-arg-0123456789abcdefghij")
	if !strings.Contains(q.log(), "warning: --token puts the token in the process's arguments") {
		t.Errorf("--token did not warn:\n%s", q.log())
	}
	q.stop(t)
}

// The repro: a loopback server used to accept anyone on the
// machine (`runuser -u nobody -- curl ...`), and creating a YAML workflow
// with a bash node then running it ran code as the server's user. serve
// now makes a random token even on loopback and prints the address to
// open with it; without it, nothing in the API answers.
func TestServeMakesATokenOnLoopback(t *testing.T) {
	t.Parallel()
	folder := t.TempDir()
	p := startServe(t, nil, "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workflows", folder)
	if len(p.token) < 40 {
		t.Fatalf("printed token %q: want a long random one\n%s", p.token, p.log())
	}
	if strings.Contains(p.log(), "warning: --token") {
		t.Errorf("a token serve made warned like --token:\n%s", p.log())
	}
	// No token: no API, no YAML file written, no run.
	yaml := map[string]any{"path": "x.yaml", "source": "name: x\ndescription: d\nnodes:\n  - id: a\n    bash: id > pwned\n"}
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/config", nil},
		{"POST", "/api/workflows/yaml", yaml},
		{"POST", "/api/runs", map[string]any{"workflowId": "yaml.x.yaml"}},
		{"POST", "/api/run", map[string]any{"graph": map[string]any{"nodes": []any{}, "edges": []any{}}}},
		{"GET", "/metrics", nil},
	} {
		if status, body := anonRequest(t, p, r.method, r.path, r.body); status != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d %s", r.method, r.path, status, body)
		}
	}
	if ents, _ := os.ReadDir(folder); len(ents) != 0 {
		t.Fatalf("a request without the token wrote %d files into the workflows folder", len(ents))
	}
	// The UI shell loads (from the printed address too) to sign in.
	for _, path := range []string{"/", "/?token=" + p.token} {
		if status, _, _ := p.get(t, path, noAuth); status != http.StatusOK {
			t.Errorf("UI shell %s: %d", path, status)
		}
	}
	// The token works as a bearer (the CLI, AgentFlow's client) ...
	if status, _, body := p.get(t, "/api/config", ""); status != http.StatusOK {
		t.Fatalf("with the printed token: %d %s", status, body)
	}
	if status, body := p.post(t, "/api/run", map[string]any{"graph": map[string]any{"nodes": []any{
		map[string]any{"id": "s", "type": "start", "x": 0, "y": 0, "data": map[string]any{"initialInput": "hi"}},
		map[string]any{"id": "ok", "type": "approval", "x": 1, "y": 0, "data": map[string]any{"prompt": "ok?"}},
	}, "connections": []any{map[string]any{"source": "s", "target": "ok", "sourceHandle": "output"}}}}); status != http.StatusOK || !strings.Contains(string(body), `"paused"`) {
		t.Errorf("AgentFlow's POST /api/run with the bearer: %d %s", status, body)
	}
	// ... and the UI trades it for its HttpOnly session cookie.
	res, err := http.Post(p.url+"/login", "application/json", strings.NewReader(`{"token":"`+p.token+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var session *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "switchyard_session" {
			session = c
		}
	}
	if res.StatusCode != http.StatusOK || session == nil || !session.HttpOnly || strings.Contains(session.Value, p.token) {
		t.Fatalf("POST /login: %d, cookie %+v", res.StatusCode, session)
	}
	req, _ := http.NewRequest("GET", p.url+"/api/workflows", nil)
	req.AddCookie(session)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("with the session cookie: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	// Each start makes a new one.
	q := startServe(t, nil, "--addr", "127.0.0.1:0", "--data", t.TempDir())
	if q.token == p.token || q.token == "" {
		t.Errorf("two starts printed tokens %q and %q", p.token, q.token)
	}
	q.stop(t)
	p.stop(t)
}

// A given token is used instead of a random one, and not printed.
func TestServeGivenTokenIsNotPrinted(t *testing.T) {
	t.Parallel()
	p := startServe(t, []string{"SWITCHYARD_TOKEN=tk-given-0123456789abcdef"}, "--addr", "127.0.0.1:0", "--data", t.TempDir())
	if p.token != "" || strings.Contains(p.log(), "tk-given-0123456789abcdef") {
		t.Fatalf("the given token was printed:\n%s", p.log())
	}
	if status, _, _ := p.get(t, "/api/config", noAuth); status != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", status)
	}
	if status, _, body := p.get(t, "/api/config", "tk-given-0123456789abcdef"); status != http.StatusOK {
		t.Fatalf("with the given token: %d %s", status, body)
	}
	p.stop(t)
}

// --no-token keeps the old open loopback server, with a warning; it is
// refused elsewhere and beside a token.
func TestServeNoToken(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--no-token")
	if p.token != "" {
		t.Fatalf("--no-token printed a token %q", p.token)
	}
	if !strings.Contains(p.log(), "warning: --no-token: every local user") {
		t.Errorf("--no-token did not warn:\n%s", p.log())
	}
	if status, _, body := p.get(t, "/api/config", noAuth); status != http.StatusOK {
		t.Fatalf("--no-token without a token: %d %s", status, body)
	}
	p.stop(t)
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--addr", "0.0.0.0:0", "--no-token"}, "", "refusing to listen"},
		{[]string{"--no-token", "--token", "tk-0123456789abcdef"}, "", "exclude each other"},
		{[]string{"--no-token"}, "SWITCHYARD_TOKEN=tk-0123456789abcdef", "exclude each other"},
	} {
		// A bounded run: a serve that wrongly starts is killed, and fails the case.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, binary, append([]string{"serve", "--data", t.TempDir()}, tc.args...)...)
		cmd.Env = append(os.Environ(), "SWITCHYARD_TOKEN="+strings.TrimPrefix(tc.env, "SWITCHYARD_TOKEN="), "SWITCHYARD_TOKEN_FILE=")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		_ = cmd.Run()
		cancel()
		code, stderr := cmd.ProcessState.ExitCode(), errb.String()
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("serve %v (%s): exit %d, stderr %q; want exit %d naming %q", tc.args, tc.env, code, stderr, exitUsage, tc.want)
		}
	}
}

// anonRequest sends a request without any token.
func anonRequest(t *testing.T, p *serverProc, method, path string, body any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, p.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(out)
}

// TestServeRefusesWeakTokens: a given token needs 16 bytes of entropy; a
// one-character token file was accepted. The error names where it came from.
func TestServeRefusesWeakTokens(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--token", "secret"}, "", "--token: the token is too weak"},
		{[]string{"--token-file", file}, "", "--token-file " + file + ": the token is too weak"},
		{nil, "SWITCHYARD_TOKEN=tk-1", "SWITCHYARD_TOKEN: the token is too weak"},
		{[]string{"--addr", "0.0.0.0:0"}, "SWITCHYARD_TOKEN=0123456789abcdef", "SWITCHYARD_TOKEN: the token is too weak"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, binary, append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, tc.args...)...)
		cmd.Env = append(os.Environ(), "SWITCHYARD_TOKEN="+strings.TrimPrefix(tc.env, "SWITCHYARD_TOKEN="), "SWITCHYARD_TOKEN_FILE=")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		_ = cmd.Run()
		cancel()
		code, stderr := cmd.ProcessState.ExitCode(), errb.String()
		if code != exitUsage || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "openssl rand -hex 16") {
			t.Errorf("serve %v (%s): exit %d, stderr %q; want exit %d naming %q", tc.args, tc.env, code, stderr, exitUsage, tc.want)
		}
	}
}

// Nodes run as serve's user: as root they can read any file and, with
// CAP_SYS_PTRACE, serve's memory, so serve says so at start (and only
// then: CI runs as root, a developer's machine usually not).
func TestServeWarnsWhenRunAsRoot(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "--data", t.TempDir())
	defer p.stop(t)
	warned := strings.Contains(p.log(), "warning: running as root: bash and script nodes")
	if root := os.Geteuid() == 0; warned != root {
		t.Errorf("running as root %v, warned %v:\n%s", root, warned, p.log())
	}
}
